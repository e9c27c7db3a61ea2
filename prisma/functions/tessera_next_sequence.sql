-- The next Allocation.sequence of a campaign (tessera_allocation_sequence says why per campaign):
-- what the row trigger tessera_number_allocation gives every new allocation, whatever inserts it. Gaps appear where a claim rolled back (nextval is not
-- transactional) and after a crash (PostgreSQL logs a sequence 32 values ahead), never a repeat.
-- A SQL function the planner inlines: nextval of the name looked up (one catalog cache probe).
-- (It calls tessera_allocation_sequence, so its file sorts after that one.)
CREATE OR REPLACE FUNCTION "tessera_next_sequence"(p_campaign_id UUID) RETURNS BIGINT
  LANGUAGE sql VOLATILE
  AS $$ SELECT nextval(tessera_allocation_sequence(p_campaign_id)::regclass) $$;
