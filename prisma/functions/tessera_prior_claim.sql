-- A keyed claim's look at the partner's other campaigns, on Citus (src/db/claimTransaction.ts calls
-- it first, in the claim's transaction, on the coordinator): takes the key's lock — the gate's lock 2
-- (tessera_claim_gate), here on the coordinator, where every keyed claim of the partner takes it —
-- then returns the key's allocation if it is in a campaign other than p_campaign_id. The gate, run on
-- the node holding p_campaign_id, looks in that campaign itself. Two requests with one key therefore
-- run one after the other wherever their campaigns live, and the second finds the first's
-- allocation, as on one PostgreSQL, where the gate looks in every campaign and this is not called.
CREATE OR REPLACE FUNCTION "tessera_prior_claim"(p_campaign_id UUID, p_partner_id UUID, p_idempotency_key TEXT)
  RETURNS TABLE (prior_campaign_id UUID, prior_allocation_id UUID)
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(2, hashtext(p_partner_id::text || ':' || p_idempotency_key));
    RETURN QUERY
        SELECT a.campaign_id, a.id FROM allocations a
         WHERE a.partner_id = p_partner_id AND a.idempotency_key = p_idempotency_key AND a.campaign_id <> p_campaign_id
         ORDER BY a.request_index
         LIMIT 1;
END
$$;
