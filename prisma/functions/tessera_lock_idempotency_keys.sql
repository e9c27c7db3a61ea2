-- The idempotency-key locks of several requests at once — the claim gate's lock 2
-- (tessera_claim_gate) — taken in key order, as a group takes every class of its locks
-- (docs/CORRECTNESS.md §5), so that two groups with keys in common cannot wait for each other in a
-- cycle. Callers: tessera_claim_campaign_group (a group of one campaign, on its node) and
-- tessera_prior_claim (the same keys on the Citus coordinator). A NULL key takes no lock.
CREATE OR REPLACE FUNCTION "tessera_lock_idempotency_keys"(p_partner_ids UUID[], p_idempotency_keys TEXT[])
  RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_lock INTEGER;
BEGIN
    FOR v_lock IN SELECT DISTINCT hashtext(k.partner_id::text || ':' || k.idempotency_key)
                    FROM unnest(p_partner_ids, p_idempotency_keys) AS k(partner_id, idempotency_key)
                   WHERE k.idempotency_key IS NOT NULL
                   ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(2, v_lock);
    END LOOP;
END
$$;
