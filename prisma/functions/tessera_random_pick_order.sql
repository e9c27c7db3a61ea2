-- Where a ticket sits in its campaign's claim order: uniformly random, so that claimers start at a
-- random point of the AVAILABLE index instead of all fighting over, and scanning the dead entries
-- at, its front (tessera_claim_tickets says why).
CREATE OR REPLACE FUNCTION "tessera_random_pick_order"() RETURNS integer
  LANGUAGE sql VOLATILE PARALLEL SAFE
  AS $$ SELECT floor(random() * 2147483647)::integer $$;

-- Every ticket gets one when it is loaded. The default is set here rather than in the baseline
-- migration because the column is created before this function exists (migrations run first).
ALTER TABLE "tickets" ALTER COLUMN "pick_order" SET DEFAULT tessera_random_pick_order();
