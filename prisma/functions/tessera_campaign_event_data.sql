-- The `data` of a campaign webhook event (docs/WEBHOOKS.md), taken in the transaction of the change
-- it reports, so its figures are the campaign's at that moment, not when the dispatcher drains it:
-- {"campaign": {"id", "status", "stats": {"total", "allocated", "held", "available"}}}.
-- (A SQL function: it sorts after tessera_campaign_counts, which it calls.)
CREATE OR REPLACE FUNCTION "tessera_campaign_event_data"(p_campaign_id UUID, p_status TEXT) RETURNS JSONB
  LANGUAGE sql VOLATILE
AS $$
    SELECT jsonb_build_object('campaign', jsonb_build_object(
               'id', p_campaign_id,
               'status', p_status,
               'stats', jsonb_build_object('total', f.total, 'allocated', f.allocated, 'held', f.held, 'available', f.available)))
      FROM tessera_campaign_counts(p_campaign_id) f;
$$;
