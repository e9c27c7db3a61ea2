-- Ballot drops (issue 17, src/db/ballots.ts): a BALLOT campaign takes entries while it is open
-- (one per partner and holder), and drawBallot ranks them by sha256("<seed>:<entry id>"), the seed
-- committed to when the campaign opened. Winners get HELD allocations for ballot_confirm_seconds;
-- lapsed holds pass on to LOST entries in rank order (tessera_pass_on_ballot).
CREATE TYPE "campaign_mode" AS ENUM ('FIRST_COME', 'BALLOT');
CREATE TYPE "ballot_entry_status" AS ENUM ('ENTERED', 'WON', 'LOST', 'LAPSED', 'WITHDRAWN');

ALTER TABLE "campaigns"
    ADD COLUMN "mode" "campaign_mode" NOT NULL DEFAULT 'FIRST_COME',
    ADD COLUMN "entries_close_at" TIMESTAMPTZ(6),
    ADD COLUMN "ballot_confirm_seconds" INTEGER;

-- One row per opened BALLOT campaign, written by openCampaign.
CREATE TABLE "ballots" (
    "campaign_id" UUID NOT NULL,
    -- lowercase hex sha256 of the seed's UTF-8 text: public from the opening
    "seed_commitment" TEXT NOT NULL,
    -- the seed, AES-256-GCM under the server's secrets key (src/ballot/seed.ts) until the draw
    "sealed_seed" TEXT NOT NULL,
    -- the seed itself, written by the draw (it is public from then on)
    "seed" TEXT,
    "entries_digest" TEXT,
    "entry_count" INTEGER,
    -- what the draw had to give: available tickets, plus each partner's live allotment
    "tickets" INTEGER,
    -- entries WON at the draw (never changes afterwards)
    "winners" INTEGER,
    -- what capped a partner's wins at the draw: {"<partner id>": {"allotted": n, "quota": n}}
    "partner_limits" JSONB,
    "drawn_at" TIMESTAMPTZ(6),
    -- the pool a pass-on last found no entry for (tessera_pass_on_ballot skips an unchanged pool)
    "pass_on_pool" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT "ballots_pkey" PRIMARY KEY ("campaign_id")
);
ALTER TABLE "ballots" ADD CONSTRAINT "ballots_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- The sweeper's pass-on looks only at drawn ballots.
CREATE INDEX "ballots_drawn" ON "ballots" ("campaign_id") WHERE "drawn_at" IS NOT NULL;

CREATE SEQUENCE "ballot_entry_sequence";
CREATE TABLE "ballot_entries" (
    "campaign_id" UUID NOT NULL,
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "partner_id" UUID NOT NULL,
    "holder" TEXT NOT NULL,
    "quantity" INTEGER NOT NULL,
    "metadata" JSONB,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "status" "ballot_entry_status" NOT NULL DEFAULT 'ENTERED',
    -- entry order: the admin's list before the draw
    "seq" BIGINT NOT NULL DEFAULT nextval('ballot_entry_sequence'),
    -- after the draw: 1-based position in the ranking
    "rank" INTEGER,
    -- after the draw: WON at the draw (false: LOST then, whatever came later)
    "won_in_draw" BOOLEAN,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT clock_timestamp(),
    "withdrawn_at" TIMESTAMPTZ(6),
    "ended_at" TIMESTAMPTZ(6),
    CONSTRAINT "ballot_entries_pkey" PRIMARY KEY ("campaign_id", "id"),
    CONSTRAINT "ballot_entries_quantity" CHECK ("quantity" BETWEEN 1 AND 100)
)
-- The draw writes status, rank and won_in_draw of every entry at once: no index names those columns
-- (not even in a predicate) and half of each page is left free, so each of those writes is a HOT
-- update — no index entry written. With the rank indexed here, a million-entry draw spent 33 of its
-- 42 seconds in that one UPDATE (docs/BENCHMARKS.md); the ranking has its own table below.
WITH (fillfactor = 50);
ALTER SEQUENCE "ballot_entry_sequence" OWNED BY "ballot_entries"."seq";
ALTER TABLE "ballot_entries" ADD CONSTRAINT "ballot_entries_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "ballot_entries" ADD CONSTRAINT "ballot_entries_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- One entry per partner and holder (a withdrawn one makes room): the backstop of tessera_enter_ballot's check.
CREATE UNIQUE INDEX "ballot_entries_holder" ON "ballot_entries" ("campaign_id", "partner_id", "holder") WHERE "withdrawn_at" IS NULL;
-- The admin's list before the draw, in entry order.
CREATE INDEX "ballot_entries_campaign_seq" ON "ballot_entries" ("campaign_id", "seq");
-- ballotEntry(id), withdrawBallotEntry(entryId): by id alone.
CREATE INDEX "ballot_entries_id" ON "ballot_entries" ("id");
CREATE UNIQUE INDEX "ballot_entries_key" ON "ballot_entries" ("campaign_id", "partner_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL;
CREATE INDEX "ballot_entries_partner_key" ON "ballot_entries" ("partner_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL;

-- The ranking, written once by the draw (insert only): the admin's list after the draw and the
-- pass-on's walk go through it in rank order. No foreign keys: only tessera_draw_ballot writes it,
-- for the entries it has just read, under the campaign's exclusive gate — and a per-row check
-- would cost a million-entry draw seconds.
CREATE TABLE "ballot_ranks" (
    "campaign_id" UUID NOT NULL,
    "rank" INTEGER NOT NULL,
    "entry_id" UUID NOT NULL,
    CONSTRAINT "ballot_ranks_pkey" PRIMARY KEY ("campaign_id", "rank")
);

-- The entry an allocation was won by.
ALTER TABLE "allocations" ADD COLUMN "ballot_entry_id" UUID;
CREATE INDEX "allocations_ballot_entry_idx" ON "allocations" ("campaign_id", "ballot_entry_id") WHERE "ballot_entry_id" IS NOT NULL;
