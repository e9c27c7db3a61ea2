-- A campaign's figures from its counter slots, in O(1) of its size — those of src/db/campaignStats.ts
-- for one campaign: a hold past its expiry counts as available (its ticket is claimable from that
-- instant) — or, under the VOID release policy, as retired — not as held, even before the sweeper
-- has written so; retired (VOID) tickets are not available. Used by the webhook events that report
-- a campaign (tessera_campaign_event_data, tessera_stock_events). VOLATILE: it reads the clock.
-- (PL/pgSQL, checked when it runs: it names columns a migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_campaign_counts"(p_campaign_id UUID)
  RETURNS TABLE (total BIGINT, allocated BIGINT, held BIGINT, available BIGINT)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.total, c.allocated, c.held - l.n,
           c.total - c.allocated - c.held - c.void
             + CASE WHEN (SELECT cp.release_policy FROM campaigns cp WHERE cp.id = p_campaign_id) = 'VOID' THEN 0 ELSE l.n END
      FROM (SELECT COALESCE(sum(s.total), 0)::bigint AS total, COALESCE(sum(s.allocated), 0)::bigint AS allocated,
                   COALESCE(sum(s.held), 0)::bigint AS held, COALESCE(sum(s.void), 0)::bigint AS void
              FROM campaign_counters s WHERE s.campaign_id = p_campaign_id) c,
           (SELECT count(*) AS n FROM allocations a
             WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()) l;
END
$$;
