-- extendHold's cap (src/db/extendHold.ts): no hold of the campaign lasts past its allocated_at plus
-- this many seconds, however often it is extended; holdTicket refuses a longer ttlSeconds. null: no
-- cap (each extension is still at most a day).
ALTER TABLE "campaigns"
    ADD COLUMN "max_hold_seconds" INTEGER,
    ADD CONSTRAINT "campaigns_max_hold_seconds" CHECK ("max_hold_seconds" IS NULL OR "max_hold_seconds" BETWEEN 1 AND 2592000);
