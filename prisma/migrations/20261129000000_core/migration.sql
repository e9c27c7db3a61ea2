-- Tessera core: partners, campaigns, tickets, allocations.
-- Hand-written in Prisma's layout; applied by src/db/migrate.ts (and compatible with `prisma migrate deploy`).

CREATE TYPE "campaign_status" AS ENUM ('DRAFT', 'OPEN', 'CLOSED');
CREATE TYPE "ticket_status" AS ENUM ('AVAILABLE', 'HELD', 'ALLOCATED');
CREATE TYPE "allocation_status" AS ENUM ('HELD', 'ACTIVE', 'RELEASED', 'EXPIRED');

-- One sequence for every allocation's fencing token. nextval() never blocks and is not rolled back,
-- so it gives a strictly increasing number without a counter row that every claim would have to
-- lock (PERFORMANCE.md, strategy C: 0.6-1.8k claims/s). CACHE 1 keeps the order global across
-- backends; gaps are expected and harmless.
CREATE SEQUENCE "allocation_sequence" AS bigint START 1 CACHE 1;

-- Where a ticket sits in its campaign's claim order: uniformly random, so that claimers start at a
-- random point of the AVAILABLE index instead of all fighting over, and scanning the dead entries
-- at, its front (see src/db/claimTicket.ts).
CREATE FUNCTION "tessera_random_pick_order"() RETURNS integer
  LANGUAGE sql VOLATILE PARALLEL SAFE
  AS $$ SELECT floor(random() * 2147483647)::integer $$;

CREATE TABLE "partners" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(6),
    CONSTRAINT "partners_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "partners_name_length" CHECK (char_length("name") BETWEEN 1 AND 200),
    CONSTRAINT "partners_key_hash_sha256" CHECK ("key_hash" ~ '^[0-9a-f]{64}$')
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
    "pick_order" INTEGER NOT NULL DEFAULT tessera_random_pick_order(),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tickets_pkey" PRIMARY KEY ("campaign_id", "id"),
    CONSTRAINT "tickets_code_length" CHECK (char_length("code") BETWEEN 1 AND 128)
);
CREATE UNIQUE INDEX "tickets_campaign_id_code_key" ON "tickets"("campaign_id", "code");
-- The claim's index, on purpose: only AVAILABLE tickets, ordered by pick_order. No other index has
-- pick_order, so the planner cannot trade it for the primary key plus a filter that walks every
-- allocated row (PERFORMANCE.md, pitfall 2).
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
    CONSTRAINT "allocations_pkey" PRIMARY KEY ("campaign_id", "id"),
    CONSTRAINT "allocations_holder_length" CHECK (char_length("holder") BETWEEN 1 AND 256),
    CONSTRAINT "allocations_idempotency_key_length" CHECK ("idempotency_key" IS NULL OR char_length("idempotency_key") BETWEEN 1 AND 255),
    CONSTRAINT "allocations_key_has_request" CHECK (("idempotency_key" IS NULL) = ("request_hash" IS NULL)),
    CONSTRAINT "allocations_held_expires" CHECK (("status" = 'HELD') <= ("expires_at" IS NOT NULL)),
    CONSTRAINT "allocations_released_at" CHECK (("status" = 'RELEASED') = ("released_at" IS NOT NULL))
);
ALTER SEQUENCE "allocation_sequence" OWNED BY "allocations"."sequence";
CREATE UNIQUE INDEX "allocations_campaign_id_sequence_key" ON "allocations"("campaign_id", "sequence");
CREATE UNIQUE INDEX "allocations_campaign_id_partner_id_idempotency_key_key" ON "allocations"("campaign_id", "partner_id", "idempotency_key");
CREATE INDEX "allocations_id_idx" ON "allocations"("id");
CREATE INDEX "allocations_partner_id_idempotency_key_idx" ON "allocations"("partner_id", "idempotency_key");
-- The database itself refuses a double allocation: at most one live allocation per ticket.
CREATE UNIQUE INDEX "allocations_one_live_per_ticket" ON "allocations"("campaign_id", "ticket_id") WHERE "status" IN ('HELD', 'ACTIVE');
-- A partner's own allocations, in allocation order (Campaign.allocations for a partner).
CREATE INDEX "allocations_campaign_id_partner_id_sequence_idx" ON "allocations"("campaign_id", "partner_id", "sequence");
-- perHolderLimit counts live allocations per (campaign, partner, holder).
CREATE INDEX "allocations_live_by_holder_idx" ON "allocations"("campaign_id", "partner_id", "holder") WHERE "status" IN ('HELD', 'ACTIVE');

ALTER TABLE "tickets" ADD CONSTRAINT "tickets_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_campaign_id_ticket_id_fkey" FOREIGN KEY ("campaign_id", "ticket_id") REFERENCES "tickets"("campaign_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- The claim gate, called once at the start of every claim statement (src/db/claimTicket.ts).
--
-- Why a function: it must take locks *before* it reads, and read with a snapshot taken *after*
-- those locks. A VOLATILE function gets a fresh snapshot for each statement it runs (READ
-- COMMITTED), which one plain SQL statement cannot do. It never touches a ticket row.
--
-- Locks, always in this order (CORRECTNESS.md 5), all transaction-scoped (safe behind PgBouncer):
--   1. the campaign gate, SHARED. closeCampaign takes it EXCLUSIVE: the lock manager queues new
--      shared requests behind a waiting exclusive one, so a close waits only for the claims already
--      in flight and is never starved (CORRECTNESS.md 4); a claim that queued behind it then reads
--      CLOSED. Shared holders never block each other: no hot row, no MultiXact.
--   2. the (partner, idempotency key) lock, when a key is given: two requests with one key run one
--      after the other, and the second finds the first's allocation (also across campaigns).
--   3. the (campaign, partner, holder) lock, when the campaign has a perHolderLimit: the count of
--      live allocations below is then exact for parallel claims by one holder.
--
-- Verdicts: OK, PRIOR (prior_allocation_id is this key's allocation), CAMPAIGN_NOT_FOUND,
-- CAMPAIGN_NOT_OPEN, HOLDER_LIMIT_REACHED.
CREATE FUNCTION "tessera_claim_gate"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_idempotency_key TEXT,
    p_quantity INTEGER
) RETURNS TABLE (verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c campaigns%ROWTYPE;
    live INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1, hashtext(p_campaign_id::text));

    IF p_idempotency_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(2, hashtext(p_partner_id::text || ':' || p_idempotency_key));
        SELECT 'PRIOR', a.campaign_id, a.id INTO verdict, prior_campaign_id, prior_allocation_id
          FROM allocations a
         WHERE a.partner_id = p_partner_id AND a.idempotency_key = p_idempotency_key
         LIMIT 1;
        IF FOUND THEN RETURN NEXT; RETURN; END IF;
    END IF;

    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND THEN
        verdict := 'CAMPAIGN_NOT_FOUND'; RETURN NEXT; RETURN;
    END IF;
    IF c.status <> 'OPEN'
       OR (c.opens_at IS NOT NULL AND clock_timestamp() < c.opens_at)
       OR (c.closes_at IS NOT NULL AND clock_timestamp() >= c.closes_at) THEN
        verdict := 'CAMPAIGN_NOT_OPEN'; RETURN NEXT; RETURN;
    END IF;

    IF c.per_holder_limit IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(3, hashtext(p_campaign_id::text || ':' || p_partner_id::text || ':' || p_holder));
        SELECT count(*) INTO live
          FROM allocations a
         WHERE a.campaign_id = p_campaign_id AND a.partner_id = p_partner_id AND a.holder = p_holder
           AND a.status IN ('HELD', 'ACTIVE');
        IF live + p_quantity > c.per_holder_limit THEN
            verdict := 'HOLDER_LIMIT_REACHED'; RETURN NEXT; RETURN;
        END IF;
    END IF;

    verdict := 'OK'; RETURN NEXT;
END
$$;
