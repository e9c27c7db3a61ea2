-- Release policies (issue 16): where a released or expired ticket goes. POOL (the default) returns
-- it to the pool; VOID retires it for good — its ticket becomes VOID, counted in
-- campaign_counters.void, neither available nor allocated. WAITLIST_FIRST is named here for the
-- waitlists that will offer returned tickets first; createCampaign refuses it until they exist.
-- The policy is chosen at creation and never changes, so every statement may read it from the
-- campaign row without a lock.
CREATE TYPE "release_policy" AS ENUM ('POOL', 'WAITLIST_FIRST', 'VOID');
ALTER TYPE "ticket_status" ADD VALUE 'VOID';
ALTER TABLE "campaigns" ADD COLUMN "release_policy" "release_policy" NOT NULL DEFAULT 'POOL';
ALTER TABLE "campaign_counters" ADD COLUMN "void" BIGINT NOT NULL DEFAULT 0;
