-- Tessera's schema as of 0.1.0: types, tables, sequences, indexes, constraints and the operator's
-- partner row. Hand-written in Prisma's layout; applied by src/db/migrate.ts (and compatible with
-- `prisma migrate deploy`).
--
-- This one migration replaces the four that built the same schema before 0.1.0 was released
-- (20261129000000_core, 20261129100000_reservations, 20261129200000_stats_counters,
-- 20261129300000_security). A database that has exactly those four recorded gets this one recorded
-- as applied without running it (src/db/migrate.ts).
--
-- The functions and triggers are not here: each lives in its own file in prisma/functions/, which
-- src/db/migrate.ts applies after the migrations. prisma/schema.sql is the whole schema that
-- results, generated (npm run db:dump).

CREATE TYPE "campaign_status" AS ENUM ('DRAFT', 'OPEN', 'CLOSED');
CREATE TYPE "ticket_status" AS ENUM ('AVAILABLE', 'HELD', 'ALLOCATED');
CREATE TYPE "allocation_status" AS ENUM ('HELD', 'ACTIVE', 'RELEASED', 'EXPIRED');

-- One allocation's contribution to the counters: what the counter triggers hand to
-- tessera_apply_allocation_delta (prisma/functions/tessera_count_allocations.sql).
CREATE TYPE "tessera_allocation_delta" AS (campaign_id UUID, partner_id UUID, status allocation_status, minute TIMESTAMPTZ, d INTEGER);

-- One sequence for every allocation's fencing token. nextval() never blocks and is not rolled back,
-- so it gives a strictly increasing number without a counter row that every claim would have to
-- lock (docs/PERFORMANCE.md, strategy C: 0.6-1.8k claims/s). CACHE 1 keeps the order global across
-- backends; gaps are expected and harmless.
CREATE SEQUENCE "allocation_sequence" AS bigint START 1 CACHE 1;

CREATE TABLE "partners" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(6),
    -- When the partner's key was last used (written at most once a minute per key: see
    -- services/partners.ts) and its own rate limit (points per second; null = the server's default).
    "last_used_at" TIMESTAMPTZ(6),
    "rotated_at" TIMESTAMPTZ(6),
    "rate_limit" INTEGER,
    CONSTRAINT "partners_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "partners_name_length" CHECK (char_length("name") BETWEEN 1 AND 200),
    CONSTRAINT "partners_key_hash_sha256" CHECK ("key_hash" ~ '^[0-9a-f]{64}$'),
    CONSTRAINT "partners_rate_limit_positive" CHECK ("rate_limit" IS NULL OR "rate_limit" > 0)
);
CREATE UNIQUE INDEX "partners_key_prefix_key" ON "partners"("key_prefix");
-- The operator: allocations made with the admin key belong to it. Its prefix can never be parsed
-- from an API key (prefixes are 12 hex digits), so no key authenticates as it.
INSERT INTO "partners" ("id", "name", "key_prefix", "key_hash")
VALUES ('00000000-0000-0000-0000-000000000000', 'Operator (admin key)', 'operator', repeat('0', 64));

CREATE TABLE "campaigns" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "status" "campaign_status" NOT NULL DEFAULT 'DRAFT',
    "opens_at" TIMESTAMPTZ(6),
    "closes_at" TIMESTAMPTZ(6),
    "per_holder_limit" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "opened_at" TIMESTAMPTZ(6),
    "closed_at" TIMESTAMPTZ(6),
    -- When the campaign's pool first had nothing available and nothing held (recorded by the
    -- release that ends a sell-out, tessera_record_sold_out; before that it is computed when read).
    "sold_out_at" TIMESTAMPTZ(6),
    CONSTRAINT "campaigns_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "campaigns_name_length" CHECK (char_length("name") BETWEEN 1 AND 200),
    CONSTRAINT "campaigns_window" CHECK ("opens_at" IS NULL OR "closes_at" IS NULL OR "opens_at" < "closes_at"),
    CONSTRAINT "campaigns_per_holder_limit_positive" CHECK ("per_holder_limit" IS NULL OR "per_holder_limit" > 0)
);
CREATE INDEX "campaigns_created_at_id_idx" ON "campaigns"("created_at" DESC, "id" DESC);

CREATE TABLE "tickets" (
    "campaign_id" UUID NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "code" TEXT NOT NULL,
    "status" "ticket_status" NOT NULL DEFAULT 'AVAILABLE',
    -- Where a ticket sits in its campaign's claim order: uniformly random (see src/db/claimTicket.ts).
    -- Its DEFAULT tessera_random_pick_order() is set in prisma/functions/tessera_random_pick_order.sql,
    -- beside the function, which exists only once the functions are applied.
    "pick_order" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tickets_pkey" PRIMARY KEY ("campaign_id", "id"),
    CONSTRAINT "tickets_code_length" CHECK (char_length("code") BETWEEN 1 AND 128)
);
CREATE UNIQUE INDEX "tickets_campaign_id_code_key" ON "tickets"("campaign_id", "code");
-- The claim's index, on purpose: only AVAILABLE tickets, ordered by pick_order. No other index has
-- pick_order, so the planner cannot trade it for the primary key plus a filter that walks every
-- allocated row (docs/PERFORMANCE.md, pitfall 2).
CREATE INDEX "tickets_available_pick_idx" ON "tickets"("campaign_id", "pick_order") WHERE "status" = 'AVAILABLE';

CREATE TABLE "allocations" (
    "campaign_id" UUID NOT NULL,
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "ticket_id" BIGINT NOT NULL,
    "partner_id" UUID NOT NULL,
    "holder" TEXT NOT NULL,
    "metadata" JSONB,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "status" "allocation_status" NOT NULL,
    "sequence" BIGINT NOT NULL DEFAULT nextval('allocation_sequence'::regclass),
    "allocated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(6),
    "released_at" TIMESTAMPTZ(6),
    -- A confirmed hold keeps the time it became ACTIVE (timeline, soldOutAt).
    "confirmed_at" TIMESTAMPTZ(6),
    -- claimTickets writes several allocations for one request, all under the request's idempotency
    -- key: the key is unique per (campaign, partner, key, position in the request).
    "request_index" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "allocations_pkey" PRIMARY KEY ("campaign_id", "id"),
    CONSTRAINT "allocations_holder_length" CHECK (char_length("holder") BETWEEN 1 AND 256),
    CONSTRAINT "allocations_idempotency_key_length" CHECK ("idempotency_key" IS NULL OR char_length("idempotency_key") BETWEEN 1 AND 255),
    CONSTRAINT "allocations_key_has_request" CHECK (("idempotency_key" IS NULL) = ("request_hash" IS NULL)),
    CONSTRAINT "allocations_held_expires" CHECK (("status" = 'HELD') <= ("expires_at" IS NOT NULL)),
    CONSTRAINT "allocations_released_at" CHECK (("status" = 'RELEASED') = ("released_at" IS NOT NULL)),
    CONSTRAINT "allocations_confirmed_only_when_active" CHECK ("confirmed_at" IS NULL OR "status" IN ('ACTIVE', 'RELEASED'))
);
ALTER SEQUENCE "allocation_sequence" OWNED BY "allocations"."sequence";
CREATE UNIQUE INDEX "allocations_campaign_id_sequence_key" ON "allocations"("campaign_id", "sequence");
CREATE UNIQUE INDEX "allocations_campaign_id_partner_id_idempotency_key_request_index_key"
    ON "allocations"("campaign_id", "partner_id", "idempotency_key", "request_index");
CREATE INDEX "allocations_id_idx" ON "allocations"("id");
CREATE INDEX "allocations_partner_id_idempotency_key_idx" ON "allocations"("partner_id", "idempotency_key");
-- The database itself refuses a double allocation: at most one live allocation per ticket.
CREATE UNIQUE INDEX "allocations_one_live_per_ticket" ON "allocations"("campaign_id", "ticket_id") WHERE "status" IN ('HELD', 'ACTIVE');
-- A partner's own allocations, in allocation order (Campaign.allocations for a partner).
CREATE INDEX "allocations_campaign_id_partner_id_sequence_idx" ON "allocations"("campaign_id", "partner_id", "sequence");
-- perHolderLimit counts live allocations per (campaign, partner, holder).
CREATE INDEX "allocations_live_by_holder_idx" ON "allocations"("campaign_id", "partner_id", "holder") WHERE "status" IN ('HELD', 'ACTIVE');
-- Holds by expiry: the claim path takes over expired holds, the sweeper returns them to the pool.
CREATE INDEX "allocations_held_expiry_idx" ON "allocations"("campaign_id", "expires_at") WHERE "status" = 'HELD';
-- Timeline and soldOutAt: ACTIVE allocations by the time they became ACTIVE.
CREATE INDEX "allocations_active_timeline_idx" ON "allocations"("campaign_id", (COALESCE("confirmed_at", "allocated_at"))) WHERE "status" = 'ACTIVE';

ALTER TABLE "tickets" ADD CONSTRAINT "tickets_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_campaign_id_ticket_id_fkey" FOREIGN KEY ("campaign_id", "ticket_id") REFERENCES "tickets"("campaign_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- A partner's cap in one campaign, and its live (HELD or ACTIVE) allocations there, counted, not
-- recounted (docs/CORRECTNESS.md §10): checking a quota is a few small reads, not a count of the
-- partner's allocations.
--
-- How the count stays exact without deadlocks: an allocation becomes live only in a claim, which
-- holds the partner's quota row (the gate locks it), so the +1 goes straight into `live`. It stops
-- being live in statements that hold no quota row — a release, the sweeper — or that hold *another*
-- partner's (a claim taking over an expired hold): if those updated the row, two claims taking over
-- each other's partners' holds would wait for each other's rows. So the -1 is an append-only credit
-- row instead (inserts never wait), which the gate subtracts and the sweeper folds into `live`.
-- The trigger that keeps both: prisma/functions/tessera_count_live.sql.
CREATE TABLE "partner_quotas" (
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    "quota" INTEGER NOT NULL,
    "live" INTEGER NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "partner_quotas_pkey" PRIMARY KEY ("campaign_id", "partner_id"),
    CONSTRAINT "partner_quotas_quota_non_negative" CHECK ("quota" >= 0)
);
ALTER TABLE "partner_quotas" ADD CONSTRAINT "partner_quotas_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "partner_quotas" ADD CONSTRAINT "partner_quotas_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "partner_quota_credits" (
    "id" BIGSERIAL NOT NULL,
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    CONSTRAINT "partner_quota_credits_pkey" PRIMARY KEY ("campaign_id", "id")
);
CREATE INDEX "partner_quota_credits_campaign_id_partner_id_idx" ON "partner_quota_credits"("campaign_id", "partner_id");

-- Stats and reports in O(1) of the campaign's size: counts kept as counters, in the same
-- transactions as the rows they count (docs/CORRECTNESS.md §10), by statement-level triggers
-- (prisma/functions/tessera_count_tickets.sql, tessera_count_allocations.sql).
--
-- No counter row is shared by two sessions at once: every backend writes the rows of its own slot,
-- slot = pg_backend_pid(), created on first use. So claims never wait for each other on a counter
-- and cannot deadlock on one (docs/PERFORMANCE.md strategy C: one counter row serializes all
-- claims). Reading sums the slots of a campaign — one row per backend that wrote since the last
-- fold; the sweeper folds the rows of backends that have exited into slot 0 (tessera_fold_counters).
CREATE TABLE "campaign_counters" (
    "campaign_id" UUID NOT NULL,
    "slot" INTEGER NOT NULL,
    "total" BIGINT NOT NULL DEFAULT 0,
    "allocated" BIGINT NOT NULL DEFAULT 0,
    "held" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "campaign_counters_pkey" PRIMARY KEY ("campaign_id", "slot")
);
CREATE TABLE "partner_counters" (
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    "slot" INTEGER NOT NULL,
    "active" BIGINT NOT NULL DEFAULT 0,
    "held" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "partner_counters_pkey" PRIMARY KEY ("campaign_id", "partner_id", "slot")
);
CREATE TABLE "minute_counters" (
    "campaign_id" UUID NOT NULL,
    "minute" TIMESTAMPTZ(6) NOT NULL,
    "slot" INTEGER NOT NULL,
    "active" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "minute_counters_pkey" PRIMARY KEY ("campaign_id", "minute", "slot")
);

-- Every admin mutation: who, what (the operation and its arguments, without secrets or bulk data),
-- when, and how it ended. Append-only: nothing in Tessera updates or deletes a row.
CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "arguments" JSONB NOT NULL,
    "outcome" TEXT NOT NULL,
    "request_id" TEXT,
    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "audit_log_at_idx" ON "audit_log"("at" DESC, "id" DESC);
