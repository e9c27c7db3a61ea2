-- The `data` of a campaign webhook event (docs/WEBHOOKS.md), taken in the transaction of the change
-- it reports, so its figures are the campaign's at that moment, not when the dispatcher drains it:
-- {"campaign": {"id", "status", "stats": {"total", "allocated", "held", "available"}}}. The figures
-- are those of src/db/campaignStats.ts — the counter slots, with a hold past its expiry counted as
-- available — for one campaign.
CREATE OR REPLACE FUNCTION "tessera_campaign_event_data"(p_campaign_id UUID, p_status TEXT) RETURNS JSONB
  LANGUAGE sql STABLE
AS $$
    WITH counts AS (
        SELECT COALESCE(sum(total), 0) AS total, COALESCE(sum(allocated), 0) AS allocated, COALESCE(sum(held), 0) AS held
          FROM campaign_counters WHERE campaign_id = p_campaign_id
    ),
    lapsed AS (
        SELECT count(*) AS n FROM allocations
         WHERE campaign_id = p_campaign_id AND status = 'HELD' AND expires_at <= clock_timestamp()
    )
    SELECT jsonb_build_object('campaign', jsonb_build_object(
               'id', p_campaign_id,
               'status', p_status,
               'stats', jsonb_build_object(
                   'total', c.total,
                   'allocated', c.allocated,
                   'held', c.held - l.n,
                   'available', c.total - c.allocated - c.held + l.n)))
      FROM counts c, lapsed l;
$$;
