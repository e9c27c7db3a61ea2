-- Refused claims per campaign, minute and code (issue 18: the console's claims-and-refusals
-- chart, Campaign.timeline's `refused`). Counted in each instance's memory off the claim path and
-- added here every few seconds (src/services/refusalCounter.ts): a refusal writes nothing on its
-- own, so a sold-out flash crowd costs the database one upsert per instance per flush.
CREATE TABLE "refusal_counters" (
    "campaign_id" UUID NOT NULL,
    "minute" TIMESTAMPTZ(6) NOT NULL,
    "code" TEXT NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "refusal_counters_pkey" PRIMARY KEY ("campaign_id", "minute", "code")
);
