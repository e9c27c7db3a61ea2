-- A campaign's figures from its counter slots, in O(1) of its size — those of src/db/campaignStats.ts
-- for one campaign: a hold past its expiry counts as available (its ticket is claimable from that
-- instant), not as held, even before the sweeper has written so. Used by the webhook events that
-- report a campaign (tessera_campaign_event_data, tessera_stock_events). VOLATILE: it reads the clock.
CREATE OR REPLACE FUNCTION "tessera_campaign_counts"(p_campaign_id UUID)
  RETURNS TABLE (total BIGINT, allocated BIGINT, held BIGINT, available BIGINT)
  LANGUAGE sql VOLATILE
AS $$
    SELECT c.total, c.allocated, c.held - l.n, c.total - c.allocated - c.held + l.n
      FROM (SELECT COALESCE(sum(s.total), 0)::bigint AS total, COALESCE(sum(s.allocated), 0)::bigint AS allocated,
                   COALESCE(sum(s.held), 0)::bigint AS held
              FROM campaign_counters s WHERE s.campaign_id = p_campaign_id) c,
           (SELECT count(*) AS n FROM allocations a
             WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()) l;
$$;
