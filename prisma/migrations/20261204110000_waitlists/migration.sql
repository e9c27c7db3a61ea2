-- Waitlists (issue 16, src/db/waitlist.ts): a holder who finds nothing available joins a campaign's
-- waitlist (one live entry per partner and holder, first come first served); under the
-- WAITLIST_FIRST release policy every ticket that comes back is offered to the earliest WAITING
-- entry whose quantity the returned tickets cover, as HELD allocations for waitlist_offer_seconds
-- (tessera_offer_returned). An entry is WAITING, then OFFERED, then ACCEPTED (every offered
-- allocation confirmed), EXPIRED (one lapsed) or LEFT (left, or declined); tessera_settle_waitlist_entry
-- moves it as its allocations change.
ALTER TABLE "campaigns" ADD COLUMN "waitlist_offer_seconds" INTEGER NOT NULL DEFAULT 900;

CREATE SEQUENCE "waitlist_sequence";
CREATE TABLE "waitlist_entries" (
    "campaign_id" UUID NOT NULL,
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "partner_id" UUID NOT NULL,
    "holder" TEXT NOT NULL,
    "quantity" INTEGER NOT NULL,
    "metadata" JSONB,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "status" "waitlist_status" NOT NULL DEFAULT 'WAITING',
    -- join order: FIFO, and what `position` counts
    "seq" BIGINT NOT NULL DEFAULT nextval('waitlist_sequence'),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT clock_timestamp(),
    "offered_at" TIMESTAMPTZ(6),
    "ended_at" TIMESTAMPTZ(6),
    CONSTRAINT "waitlist_entries_pkey" PRIMARY KEY ("campaign_id", "id"),
    CONSTRAINT "waitlist_entries_quantity" CHECK ("quantity" BETWEEN 1 AND 100)
);
ALTER SEQUENCE "waitlist_sequence" OWNED BY "waitlist_entries"."seq";
ALTER TABLE "waitlist_entries" ADD CONSTRAINT "waitlist_entries_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "waitlist_entries" ADD CONSTRAINT "waitlist_entries_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- One live entry per partner and holder (the backstop of tessera_join_waitlist's check).
CREATE UNIQUE INDEX "waitlist_entries_live_holder" ON "waitlist_entries" ("campaign_id", "partner_id", "holder") WHERE "status" IN ('WAITING', 'OFFERED');
-- The queue, in join order: what an offer walks, and what position and waitlistLength count.
CREATE INDEX "waitlist_entries_waiting" ON "waitlist_entries" ("campaign_id", "seq") WHERE "status" = 'WAITING';
-- The admin's list, in join order.
CREATE INDEX "waitlist_entries_campaign_seq" ON "waitlist_entries" ("campaign_id", "seq");
-- waitlistEntry(id), leaveWaitlist(entryId): by id alone.
CREATE INDEX "waitlist_entries_id" ON "waitlist_entries" ("id");
CREATE UNIQUE INDEX "waitlist_entries_key" ON "waitlist_entries" ("campaign_id", "partner_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL;
CREATE INDEX "waitlist_entries_partner_key" ON "waitlist_entries" ("partner_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL;

-- The offer an allocation belongs to.
ALTER TABLE "allocations" ADD COLUMN "waitlist_entry_id" UUID;
CREATE INDEX "allocations_waitlist_entry_idx" ON "allocations" ("campaign_id", "waitlist_entry_id") WHERE "waitlist_entry_id" IS NOT NULL;

-- Tickets waiting for tessera_offer_returned: empty but for an instant (or a crash), and free to probe.
CREATE INDEX "tickets_returned_idx" ON "tickets" ("campaign_id", "pick_order") WHERE "status" = 'RETURNED';
