-- A campaign's figures — every field of CampaignStats, with whether it is sold out and since when: one
-- function for all of them. Read by src/db/campaignStats.ts (the API's stats and the live
-- subscription), tessera_campaign_event_data (the figures of every campaign webhook event),
-- tessera_stock_events (CAMPAIGN_SOLD_OUT, CAMPAIGN_LOW_STOCK) and tessera_record_sold_out
-- (soldOutAt). Batched: one call for every campaign a request asks about. O(1) in the campaign's size
-- from the counter slots, plus O(allotted) and O(expired holds). VOLATILE: it reads the clock.
--
-- Every ticket is in exactly one figure, so total = allocated + held + allotted + available + void
-- in every answer (one call, one snapshot):
--   allocated  an ACTIVE allocation;
--   held       a HELD allocation (a hold, a waitlist offer, a ballot winner's hold) and, under
--              WAITLIST_FIRST, a ticket on its way to the waitlist (RETURNED, or left in an
--              allotment past lapses_at that the sweeper has not returned yet): no claim takes it;
--   allotted   an unused ticket of a live allotment: its partner's only, until lapses_at;
--   available  what any partner may take now;
--   void       retired by the VOID release policy.
-- A hold past its expiry is not held, even before the sweeper has written so (counted from the index
-- of held allocations): it is available under POOL (its ticket is claimable from that instant),
-- allotted when drawn from a live allotment it returns to, void under VOID, which retires it, and
-- still held under WAITLIST_FIRST until the sweeper has offered it.
--
-- sold_out: tessera_sold_out, the definition (of these same counters: it is true exactly when
-- available = 0, allotted = 0 and, unless the policy is VOID, held = 0).
-- sold_out_at: when the campaign first became sold out. The statement that ends a sell-out records
-- it first (campaigns.sold_out_at, tessera_record_sold_out); while the first sell-out lasts it is
-- computed here: the moment the last ticket left what could be claimed or come back — when the last
-- ticket became ACTIVE (one backward step of the timeline index), or under VOID, where a hold
-- already counts as gone, when the campaign's latest allocation was made (one backward step of its
-- sequence index).
DROP FUNCTION IF EXISTS "tessera_campaign_counts"(UUID);
CREATE OR REPLACE FUNCTION "tessera_campaign_counts"(p_campaign_ids UUID[])
  RETURNS TABLE (campaign_id UUID, total BIGINT, allocated BIGINT, held BIGINT, allotted BIGINT, available BIGINT,
                 void BIGINT, fill_rate DOUBLE PRECISION, sold_out BOOLEAN, sold_out_at TIMESTAMPTZ)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    p_id UUID;
BEGIN
    -- One query per campaign, naming it alone: on Citus each is routed to the node holding the
    -- campaign (a query over several campaigns' shards cannot join them); every campaign's figures
    -- come from one snapshot of their own.
    FOREACH p_id IN ARRAY COALESCE(p_campaign_ids, '{}') LOOP
    RETURN QUERY
    WITH campaign AS MATERIALIZED (
        SELECT cp.id, cp.release_policy::text AS policy, cp.sold_out_at AS recorded
          FROM campaigns cp WHERE cp.id = p_id
    ),
    counts AS (
        SELECT c.campaign_id, sum(c.total) AS total, sum(c.allocated) AS allocated, sum(c.held) AS held, sum(c.void) AS void
          FROM campaign_counters c
         WHERE c.campaign_id = p_id
         GROUP BY c.campaign_id
    ),
    live_allotments AS MATERIALIZED (
        SELECT l.campaign_id, l.partner_id FROM allotments l
         WHERE l.campaign_id = p_id AND l.lapsed_at IS NULL AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())
    ),
    -- Holds past their expiry that the sweeper has not written yet; `drawn`: from a live allotment.
    lapsed AS (
        SELECT a.campaign_id, count(*) AS n,
               count(*) FILTER (WHERE a.from_allotment AND (a.campaign_id, a.partner_id) IN (SELECT x.campaign_id, x.partner_id FROM live_allotments x)) AS drawn
          FROM allocations a
         WHERE a.campaign_id = p_id AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
         GROUP BY a.campaign_id
    ),
    set_aside AS (
        SELECT t.campaign_id, count(*) AS n
          FROM tickets t JOIN live_allotments l ON l.campaign_id = t.campaign_id AND l.partner_id = t.allotted_to
         WHERE t.campaign_id = p_id AND t.status = 'ALLOTTED'
         GROUP BY t.campaign_id
    ),
    -- WAITLIST_FIRST: on their way to the waitlist, counted as held.
    on_the_way AS (
        SELECT t.campaign_id, count(*) AS n
          FROM tickets t
         WHERE t.campaign_id = p_id
           AND (t.status = 'RETURNED'
                OR (t.status = 'ALLOTTED'
                    AND (SELECT k.policy FROM campaign k WHERE k.id = t.campaign_id) = 'WAITLIST_FIRST'
                    AND (t.campaign_id, t.allotted_to) NOT IN (SELECT x.campaign_id, x.partner_id FROM live_allotments x)))
         GROUP BY t.campaign_id
    ),
    figures AS (
        SELECT k.id, k.policy, k.recorded,
               COALESCE(c.total, 0) AS total,
               COALESCE(c.allocated, 0) AS allocated,
               COALESCE(c.held, 0) + COALESCE(r.n, 0)
                 - CASE k.policy WHEN 'WAITLIST_FIRST' THEN COALESCE(l.drawn, 0) ELSE COALESCE(l.n, 0) END AS held,
               COALESCE(s.n, 0) + CASE WHEN k.policy = 'VOID' THEN 0 ELSE COALESCE(l.drawn, 0) END AS allotted,
               COALESCE(c.total - c.allocated - c.held - c.void, 0) - COALESCE(s.n, 0) - COALESCE(r.n, 0)
                 + CASE WHEN k.policy = 'POOL' THEN COALESCE(l.n - l.drawn, 0) ELSE 0 END AS available,
               COALESCE(c.void, 0) + CASE WHEN k.policy = 'VOID' THEN COALESCE(l.n, 0) ELSE 0 END AS void
          FROM campaign k
          LEFT JOIN counts c ON c.campaign_id = k.id
          LEFT JOIN lapsed l ON l.campaign_id = k.id
          LEFT JOIN set_aside s ON s.campaign_id = k.id
          LEFT JOIN on_the_way r ON r.campaign_id = k.id
    ),
    judged AS (
        SELECT f.*, tessera_sold_out(c.total::bigint, c.allocated::bigint, c.held::bigint, c.void::bigint, f.policy) IS TRUE AS sold_out
          FROM figures f LEFT JOIN counts c ON c.campaign_id = f.id
    )
    SELECT j.id, j.total::bigint, j.allocated::bigint, j.held::bigint, j.allotted::bigint, j.available::bigint, j.void::bigint,
           CASE WHEN j.total = 0 THEN 0::float8 ELSE j.allocated::float8 / j.total::float8 END,
           j.sold_out,
           COALESCE(j.recorded, CASE WHEN j.sold_out THEN
               CASE WHEN j.policy = 'VOID'
                    THEN (SELECT a.allocated_at FROM allocations a WHERE a.campaign_id = p_id ORDER BY a.sequence DESC LIMIT 1)
                    ELSE (SELECT max(COALESCE(a.confirmed_at, a.allocated_at)) FROM allocations a
                           WHERE a.campaign_id = p_id AND a.status = 'ACTIVE')
               END
           END)
      FROM judged j;
    END LOOP;
END
$$;
