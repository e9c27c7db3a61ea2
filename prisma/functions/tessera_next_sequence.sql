-- The next Allocation.sequence of a campaign (tessera_allocation_sequence says why per campaign):
-- what every statement that inserts allocations writes — the claim statements (src/db/claimOne.ts,
-- claimGroup.ts, claimTicket.ts), waitlist offers (tessera_offer_returned) and ballot holds
-- (tessera_ballot_hold_winners). The column has no default, so an insert that forgets it fails
-- instead of numbering from somewhere else. Gaps appear where a claim rolled back (nextval is not
-- transactional) and after a crash (PostgreSQL logs a sequence 32 values ahead), never a repeat.
-- A SQL function the planner inlines: nextval of the name looked up (one catalog cache probe).
-- (It calls tessera_allocation_sequence, so its file sorts after that one.)
CREATE OR REPLACE FUNCTION "tessera_next_sequence"(p_campaign_id UUID) RETURNS BIGINT
  LANGUAGE sql VOLATILE
  AS $$ SELECT nextval(tessera_allocation_sequence(p_campaign_id)::regclass) $$;
