-- CAMPAIGN_SOLD_OUT and CAMPAIGN_LOW_STOCK webhook events (docs/WEBHOOKS.md): the campaign's
-- threshold, and when each was last announced — the markers that make each announcement happen
-- once (tessera_stock_events).
ALTER TABLE "campaigns"
    ADD COLUMN "low_stock_threshold" INTEGER,
    ADD COLUMN "sold_out_announced_at" TIMESTAMPTZ(6),
    ADD COLUMN "low_stock_announced_at" TIMESTAMPTZ(6),
    ADD CONSTRAINT "campaigns_low_stock_threshold" CHECK ("low_stock_threshold" IS NULL OR "low_stock_threshold" >= 1);
