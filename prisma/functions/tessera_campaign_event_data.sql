-- The `data` of a campaign webhook event (docs/WEBHOOKS.md), taken in the transaction of the change
-- it reports, so its figures are the campaign's at that moment, not when the dispatcher drains it:
-- {"campaign": {"id", "status", "stats": {<every CampaignStats field, named as in schema.graphql>}}}
-- — total, allocated, held, allotted, available, void, fillRate, soldOut and soldOutAt, all from
-- tessera_campaign_counts, which the API's stats read too (one computation of each figure, sold out
-- as tessera_sold_out defines it; test/soldOut.test.ts checks the names against schema.graphql). soldOutAt is written as
-- the API writes a DateTime: UTC, milliseconds, "Z".
-- (A SQL function: it sorts after tessera_campaign_counts, which it calls.)
CREATE OR REPLACE FUNCTION "tessera_campaign_event_data"(p_campaign_id UUID, p_status TEXT) RETURNS JSONB
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- PL/pgSQL, not SQL: Citus cannot plan a query of distributed tables inside a SQL function.
    RETURN (SELECT jsonb_build_object('campaign', jsonb_build_object(
               'id', p_campaign_id,
               'status', p_status,
               'stats', jsonb_build_object(
                   'total', f.total, 'allocated', f.allocated, 'held', f.held, 'allotted', f.allotted,
                   'available', f.available, 'void', f.void, 'fillRate', f.fill_rate, 'soldOut', f.sold_out,
                   'soldOutAt', to_char(f.sold_out_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))))
      FROM tessera_campaign_counts(ARRAY[p_campaign_id]) f);
END
$$;
