-- Test mode (issue 31): test campaigns beside live ones, and a test key per partner.
--
-- A test campaign's id says so: it has the layout of a version 7 id (time, then random bits) with
-- version 8 in place of 7 (RFC 9562's version for custom layouts). Every campaign made before has
-- a version 4 or 7 id, so it stays live. The id travels with every object of the campaign — an
-- allocation, an entry, a webhook event — so whether a request may see one is decided from the id
-- alone, with no look-up on the claim path (src/testMode.ts). `test` says the same in a column, for
-- SQL that filters on it; the CHECK keeps the two in agreement.
ALTER TABLE "campaigns" ADD COLUMN "test" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_test_id" CHECK ("test" = (get_byte(uuid_send("id"), 6) >> 4 = 8));

-- A partner's test key (`tsp_test_<prefix>_<secret>`): one row per partner, kept apart from the
-- partners row so that using a test key changes no live row (last_used_at is written here).
CREATE TABLE "partner_test_keys" (
    "partner_id" UUID NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(6),
    "last_used_at" TIMESTAMPTZ(6),
    CONSTRAINT "partner_test_keys_pkey" PRIMARY KEY ("partner_id")
);
CREATE UNIQUE INDEX "partner_test_keys_key_prefix_key" ON "partner_test_keys"("key_prefix");
ALTER TABLE "partner_test_keys" ADD CONSTRAINT "partner_test_keys_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE RESTRICT;
