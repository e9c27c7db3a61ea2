-- The idempotency-key locks of several requests at once, in the one order (tessera_lock_each): the
-- coordinator's look at a keyed group's other campaigns (tessera_prior_claim) takes them so. A NULL
-- key takes no lock.
CREATE OR REPLACE FUNCTION "tessera_lock_idempotency_keys"(p_partner_ids UUID[], p_idempotency_keys TEXT[])
  RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM tessera_lock_each('idempotency_key',
                              ARRAY(SELECT k.partner_id::text || ':' || k.idempotency_key
                                      FROM unnest(p_partner_ids, p_idempotency_keys) AS k(partner_id, idempotency_key)));
END
$$;
