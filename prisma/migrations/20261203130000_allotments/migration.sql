-- Allotments (issue 16, src/db/allotments.ts): `size` tickets of a campaign set aside for one
-- partner until `lapses_at`. The unused ones are tickets with status ALLOTTED and allotted_to = the
-- partner, so no other partner's pick (status = 'AVAILABLE') can ever take them; the partner's own
-- claims take them first (allocations.from_allotment marks what was drawn from it, and what returns
-- to it on release). From lapses_at on, any claim may take what is left (the second look), and the
-- sweeper returns the rest to the pool, records lapsed_at and `returned`, and announces
-- ALLOTMENT_LAPSED — once, under the row's lock.
CREATE TABLE "allotments" (
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    "size" INTEGER NOT NULL,
    "lapses_at" TIMESTAMPTZ(6),
    "lapsed_at" TIMESTAMPTZ(6),
    "returned" INTEGER,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "allotments_pkey" PRIMARY KEY ("campaign_id", "partner_id"),
    CONSTRAINT "allotments_size_non_negative" CHECK ("size" >= 0)
);
ALTER TABLE "allotments" ADD CONSTRAINT "allotments_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "allotments" ADD CONSTRAINT "allotments_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- Due lapses, for the sweeper.
CREATE INDEX "allotments_due_idx" ON "allotments" ("lapses_at") WHERE "lapsed_at" IS NULL AND "lapses_at" IS NOT NULL;

ALTER TABLE "tickets" ADD COLUMN "allotted_to" UUID;
-- A partner's set-aside tickets, in pick order; empty (and free to probe) in a campaign without
-- allotments, which is what every claim's first look asks it.
CREATE INDEX "tickets_allotted_idx" ON "tickets" ("campaign_id", "allotted_to", "pick_order") WHERE "status" = 'ALLOTTED';

ALTER TABLE "allocations" ADD COLUMN "from_allotment" BOOLEAN NOT NULL DEFAULT false;
