-- Test mode (issue 31): every webhook endpoint belongs to one mode. A test endpoint (made with a
-- partner's test key, or by an operator with test: true) receives the events of test campaigns
-- only; a live one those of live campaigns only (src/db/webhookDeliveries.ts, routes()).
ALTER TABLE "webhook_endpoints" ADD COLUMN "test" BOOLEAN NOT NULL DEFAULT false;
