-- soldOutAt: when the campaign first became sold out (the definition: tessera_sold_out; how the
-- moment is found while the sell-out lasts: tessera_campaign_counts). Every statement that can end a sell-out — a
-- release, loading more tickets — calls this first, in its transaction: if the campaign is sold out
-- at that moment, the time it sold out is recorded before it stops being true (the last moment
-- anyone can still tell); once recorded it is kept, as the first sell-out's. (PL/pgSQL, checked
-- when it runs: it names a column a migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_record_sold_out"(p_campaign_id UUID) RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- Already recorded: nothing to compute (a release of a campaign that sold out long ago).
    IF (SELECT cp.sold_out_at IS NOT NULL FROM campaigns cp WHERE cp.id = p_campaign_id) THEN
        RETURN;
    END IF;
    UPDATE campaigns cp
       SET sold_out_at = f.sold_out_at
      FROM tessera_campaign_counts(ARRAY[p_campaign_id]) f
     WHERE cp.id = p_campaign_id AND f.campaign_id = cp.id AND f.sold_out AND cp.sold_out_at IS NULL;
END
$$;
