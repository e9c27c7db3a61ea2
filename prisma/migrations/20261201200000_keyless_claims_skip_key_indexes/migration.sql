-- A claim without an idempotency key has nothing to find by key: the two indexes on keys cover only
-- the allocations that have one, so a keyless claim maintains two indexes fewer (each a B-tree insert
-- of a NULL key before). The gate's look-up by (partner, key) and the backstop unique index name a
-- key, so the partial indexes serve them as before.
DROP INDEX "allocations_campaign_id_partner_id_idempotency_key_request_index_key";
CREATE UNIQUE INDEX "allocations_campaign_id_partner_id_idempotency_key_request_index_key"
    ON "allocations"("campaign_id", "partner_id", "idempotency_key", "request_index")
    WHERE "idempotency_key" IS NOT NULL;
DROP INDEX "allocations_partner_id_idempotency_key_idx";
CREATE INDEX "allocations_partner_id_idempotency_key_idx" ON "allocations"("partner_id", "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;
