-- soldOutAt: when the campaign first became sold out (the definition: tessera_sold_out; how the
-- moment is found while the sell-out lasts: tessera_campaign_counts). Every statement that can end a sell-out — a
-- release, loading more tickets — calls this first, in its transaction: if the campaign is sold out
-- at that moment, the time it sold out is recorded before it stops being true (the last moment
-- anyone can still tell); once recorded it is kept, as the first sell-out's. (PL/pgSQL, checked
-- when it runs: it names a column a migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_record_sold_out"(p_campaign_id UUID) RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    f RECORD;
BEGIN
    -- Already recorded: nothing to compute (a release of a campaign that sold out long ago).
    IF (SELECT cp.sold_out_at IS NOT NULL FROM campaigns cp WHERE cp.id = p_campaign_id) THEN
        RETURN;
    END IF;
    -- Read, then written: on Citus the campaign (a reference table) cannot be updated from a query
    -- of the distributed counters in one statement.
    SELECT x.sold_out, x.sold_out_at INTO f FROM tessera_campaign_counts(ARRAY[p_campaign_id]) x;
    IF f.sold_out THEN
        UPDATE campaigns cp SET sold_out_at = f.sold_out_at WHERE cp.id = p_campaign_id AND cp.sold_out_at IS NULL;
    END IF;
END
$$;
