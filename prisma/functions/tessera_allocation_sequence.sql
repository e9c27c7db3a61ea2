-- The name of a campaign's own allocation sequence: `allocation_sequence_<the campaign id's 32 hex
-- digits>`. Allocation.sequence is numbered per campaign — 1 for a campaign's first allocation, then
-- strictly increasing with allocation order — from a PostgreSQL sequence of the campaign's own
-- (tessera_campaign_sequence creates it with the campaign; tessera_next_sequence draws from it).
-- Why a sequence per campaign and not a counter on the campaign's row: nextval never blocks and is
-- not transactional, so no claim waits for another; a counter row updated by every claim would
-- serialize a campaign's claims on that row's lock until each commits (docs/PERFORMANCE.md,
-- strategy C: 0.6–1.8k claims/s). The one name rule, here; IMMUTABLE, so the planner inlines it.
CREATE OR REPLACE FUNCTION "tessera_allocation_sequence"(p_campaign_id UUID) RETURNS TEXT
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT 'allocation_sequence_' || replace(p_campaign_id::text, '-', '') $$;
