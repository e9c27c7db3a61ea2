-- Operator roles and scoped partner keys (issue 18, src/services/operatorKeys.ts, src/access.ts).
-- Operator keys are issued like partner keys — `tso_<prefix>_<secret>`, found by the prefix, the
-- SHA-256 of the whole key compared, the key shown once and never stored — and carry a role.
-- ADMIN_API_KEY is an OWNER and has no row.
CREATE TYPE "operator_role" AS ENUM ('OWNER', 'OPERATOR', 'VIEWER');

CREATE TABLE "operator_keys" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "role" "operator_role" NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(6),
    "revoked_at" TIMESTAMPTZ(6),

    CONSTRAINT "operator_keys_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "operator_keys_key_prefix_key" ON "operator_keys"("key_prefix");

-- The operator key that acted (null for ADMIN_API_KEY and for partners). No foreign key: the audit
-- log outlives whatever it names, and keys are revoked, never deleted.
ALTER TABLE "audit_log" ADD COLUMN "operator_id" UUID;

-- A partner key's campaigns (scopePartnerKey): scoped = false is every campaign; a scoped key sees
-- and touches only campaign_scope ('{}' = none).
ALTER TABLE "partners"
    ADD COLUMN "scoped" BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN "campaign_scope" UUID[] NOT NULL DEFAULT '{}';
