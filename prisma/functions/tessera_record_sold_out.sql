-- soldOutAt: when the pool first had nothing available and nothing held. Every statement that can
-- end a sell-out — a release, loading more tickets — calls this first, in its transaction: if the
-- campaign is sold out at that moment (from the counters: O(1)), the time it sold out — when its
-- last ticket became ACTIVE — is recorded before it stops being true. While a campaign stays sold
-- out, reads compute the same value (src/db/campaignStats.ts).
-- Sold out: every ticket allocated or retired (VOID), nothing held. (PL/pgSQL, checked when it
-- runs: it names a column a migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_record_sold_out"(p_campaign_id UUID) RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    UPDATE campaigns cp
       SET sold_out_at = (SELECT max(COALESCE(a.confirmed_at, a.allocated_at)) FROM allocations a
                           WHERE a.campaign_id = cp.id AND a.status = 'ACTIVE')
     WHERE cp.id = p_campaign_id AND cp.sold_out_at IS NULL
       AND (SELECT sum(total) > 0 AND sum(total) = sum(allocated) + sum(void) FROM campaign_counters WHERE campaign_id = p_campaign_id);
END
$$;
