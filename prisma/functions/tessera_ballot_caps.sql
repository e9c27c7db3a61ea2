-- What each partner with a quota in the campaign may still win: {"<partner id>": n},
-- its quota less its live allocations — counted as the claim gate counts them (net of quota credits
-- not yet folded in and of its holds already past their expiry). With p_lock the quota rows are
-- locked (FOR UPDATE, as the gate locks them), so a setPartnerQuota waits for the draw or pass-on;
-- without, it is the pass-on's cheap look whether anything changed.
-- (PL/pgSQL, checked when it runs.)
CREATE OR REPLACE FUNCTION "tessera_ballot_caps"(p_campaign_id UUID, p_lock BOOLEAN) RETURNS JSONB
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF p_lock THEN
        PERFORM 1 FROM partner_quotas x WHERE x.campaign_id = p_campaign_id FOR UPDATE;
    END IF;
    RETURN (SELECT COALESCE(jsonb_object_agg(q.partner_id::text, GREATEST(0,
                      q.quota - (q.live
                                 - (SELECT count(*) FROM partner_quota_credits k
                                     WHERE k.campaign_id = p_campaign_id AND k.partner_id = q.partner_id)
                                 - (SELECT count(*) FROM allocations a
                                     WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD'
                                       AND a.expires_at <= clock_timestamp() AND a.partner_id = q.partner_id)))), '{}'::jsonb)
              FROM partner_quotas q WHERE q.campaign_id = p_campaign_id);
END
$$;
