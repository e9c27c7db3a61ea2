-- A campaign's figures from its counter slots — those of src/db/campaignStats.ts for one campaign:
-- a hold past its expiry counts as available (its ticket is claimable from that instant) — or as
-- retired under the VOID release policy, or as allotted when drawn from a live allotment it returns
-- to — not as held, even before the sweeper has written so (under WAITLIST_FIRST it stays held until
-- the sweeper has offered it); retired (VOID) tickets and the unused
-- tickets of live allotments are not available. Used by the webhook events that report a campaign
-- (tessera_campaign_event_data, tessera_stock_events). VOLATILE: it reads the clock.
-- (PL/pgSQL, checked when it runs: it names columns and a table migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_campaign_counts"(p_campaign_id UUID)
  RETURNS TABLE (total BIGINT, allocated BIGINT, held BIGINT, available BIGINT)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    policy TEXT := (SELECT cp.release_policy::text FROM campaigns cp WHERE cp.id = p_campaign_id);
BEGIN
    RETURN QUERY
    WITH live_allotments AS MATERIALIZED (
        SELECT l.partner_id FROM allotments l
         WHERE l.campaign_id = p_campaign_id AND l.lapsed_at IS NULL AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())
    )
    SELECT c.total, c.allocated,
           c.held + r.n - CASE WHEN policy = 'WAITLIST_FIRST' THEN l.drawn ELSE l.n END,
           c.total - c.allocated - c.held - c.void - s.n - r.n
             + CASE WHEN policy = 'POOL' THEN l.n - l.drawn ELSE 0 END
      FROM (SELECT COALESCE(sum(x.total), 0)::bigint AS total, COALESCE(sum(x.allocated), 0)::bigint AS allocated,
                   COALESCE(sum(x.held), 0)::bigint AS held, COALESCE(sum(x.void), 0)::bigint AS void
              FROM campaign_counters x WHERE x.campaign_id = p_campaign_id) c,
           (SELECT count(*) AS n,
                   count(*) FILTER (WHERE a.from_allotment AND a.partner_id IN (SELECT partner_id FROM live_allotments)) AS drawn
              FROM allocations a
             WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()) l,
           (SELECT count(*) AS n FROM tickets t
             WHERE t.campaign_id = p_campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to IN (SELECT partner_id FROM live_allotments)) s,
           -- WAITLIST_FIRST: on their way to the waitlist (RETURNED, or left in a lapsed allotment the
           -- sweeper has not returned yet) — held, as in src/db/campaignStats.ts.
           (SELECT count(*) AS n FROM tickets t
             WHERE t.campaign_id = p_campaign_id
               AND (t.status = 'RETURNED'
                    OR (policy = 'WAITLIST_FIRST' AND t.status = 'ALLOTTED' AND t.allotted_to NOT IN (SELECT partner_id FROM live_allotments)))) r;
END
$$;
