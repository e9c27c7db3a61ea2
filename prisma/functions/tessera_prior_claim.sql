-- Keyed claims' look at the partner's other campaigns, on Citus (src/claim/transaction.ts calls
-- it first, in the claims' transaction, on the coordinator, for one claim or a group of one
-- campaign's): takes the keys' locks — the gate's idempotency_key locks (tessera_lock), here on the
-- coordinator, where every keyed claim of the partner takes them — in key order, as a group takes
-- them, then returns, for each request whose key has its allocation in a
-- campaign other than p_campaign_id, that allocation (`ord`: the request's place in the arrays). The
-- gate, run on the node holding p_campaign_id, looks in that campaign itself. Two requests with one
-- key therefore run one after the other wherever their campaigns live, and the second finds the
-- first's allocation, as on one PostgreSQL, where the gate looks in every campaign and this is not
-- called.
DROP FUNCTION IF EXISTS "tessera_prior_claim"(UUID, UUID, TEXT);
CREATE OR REPLACE FUNCTION "tessera_prior_claim"(p_campaign_id UUID, p_partner_ids UUID[], p_idempotency_keys TEXT[])
  RETURNS TABLE (ord INTEGER, prior_campaign_id UUID, prior_allocation_id UUID)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_i INTEGER;
BEGIN
    PERFORM tessera_lock_idempotency_keys(p_partner_ids, p_idempotency_keys);
    FOR v_i IN 1 .. cardinality(p_partner_ids) LOOP
        CONTINUE WHEN p_idempotency_keys[v_i] IS NULL;
        RETURN QUERY
            SELECT v_i, a.campaign_id, a.id FROM allocations a
             WHERE a.partner_id = p_partner_ids[v_i] AND a.idempotency_key = p_idempotency_keys[v_i]
               AND a.campaign_id <> p_campaign_id
             ORDER BY a.request_index
             LIMIT 1;
    END LOOP;
END
$$;
