-- joinWaitlist (src/db/waitlist.ts): one live (WAITING or OFFERED) entry per partner and
-- holder, in join order, only while the partner could not claim a ticket.
--
-- Why a function: like the claim gate, it must read after its locks, with a fresh snapshot per
-- statement. Locks, in this order (docs/CORRECTNESS.md §5):
--   1. the campaign gate, shared (closeCampaign takes it exclusive: a join either sees the campaign
--      open or waits and sees it closed);
--   2. the (partner, idempotency key) lock, when a key is given, as for a claim: a second request
--      with the key finds the first's entry;
--   6. the campaign's waitlist lock, which tessera_offer_returned holds while it offers returned
--      tickets and puts the rest back in the pool: a join either is in that walk or comes after it
--      and sees those tickets AVAILABLE (NOT_SOLD_OUT) — no ticket goes to the pool while an entry it
--      could serve waits. (Not the holder lock: an offer takes that after lock 6.)
--
-- Verdicts: OK (entry_id is the new entry), PRIOR (entry_id is the key's entry), ALREADY_ENTERED
-- (entry_id is the live entry), CAMPAIGN_NOT_FOUND, CAMPAIGN_NOT_OPEN, INVALID_INPUT (the policy is
-- not WAITLIST_FIRST, or quantity is above the perHolderLimit), HOLDER_LIMIT_REACHED (the holder's
-- live allocations and the quantity would pass perHolderLimit), NOT_SOLD_OUT (a ticket is AVAILABLE,
-- or left in the partner's own live allotment). Nothing is written unless OK.
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_join_waitlist"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_quantity INTEGER,
    p_metadata JSONB,
    p_idempotency_key TEXT,
    p_request_hash TEXT
) RETURNS TABLE (verdict TEXT, entry_id UUID, prior_campaign_id UUID, prior_request_hash TEXT)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c campaigns%ROWTYPE;
    live INTEGER;
BEGIN
    PERFORM tessera_lock('campaign', p_campaign_id::text, true);

    IF p_idempotency_key IS NOT NULL THEN
        PERFORM tessera_lock('idempotency_key', p_partner_id::text || ':' || p_idempotency_key);
        SELECT 'PRIOR', w.id, w.campaign_id, w.request_hash INTO verdict, entry_id, prior_campaign_id, prior_request_hash
          FROM waitlist_entries w
         WHERE w.partner_id = p_partner_id AND w.idempotency_key = p_idempotency_key
         LIMIT 1;
        IF FOUND THEN RETURN NEXT; RETURN; END IF;
    END IF;

    -- Found and open, as a claim is checked (quantity 0: the campaign only, no holder or quota lock).
    SELECT g.verdict INTO verdict FROM tessera_claim_gate(p_campaign_id, p_partner_id, p_holder, NULL, 0, 0, true) g;
    IF verdict <> 'OK' THEN RETURN NEXT; RETURN; END IF;
    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF c.release_policy <> 'WAITLIST_FIRST' OR p_quantity > COALESCE(c.per_holder_limit, 100) THEN
        verdict := 'INVALID_INPUT'; RETURN NEXT; RETURN;
    END IF;

    PERFORM tessera_lock('waitlist', p_campaign_id::text);

    SELECT 'ALREADY_ENTERED', w.id INTO verdict, entry_id
      FROM waitlist_entries w
     WHERE w.campaign_id = p_campaign_id AND w.partner_id = p_partner_id AND w.holder = p_holder
       AND w.status IN ('WAITING', 'OFFERED');
    IF FOUND THEN RETURN NEXT; RETURN; END IF;

    IF c.per_holder_limit IS NOT NULL THEN
        SELECT count(*) INTO live FROM allocations a
         WHERE a.campaign_id = p_campaign_id AND a.partner_id = p_partner_id AND a.holder = p_holder
           AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp()));
        IF live + p_quantity > c.per_holder_limit THEN
            verdict := 'HOLDER_LIMIT_REACHED'; RETURN NEXT; RETURN;
        END IF;
    END IF;

    IF EXISTS (SELECT 1 FROM tickets t WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE')
       OR EXISTS (SELECT 1 FROM tickets t
                   WHERE t.campaign_id = p_campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to = p_partner_id
                     AND EXISTS (SELECT 1 FROM allotments l
                                  WHERE l.campaign_id = p_campaign_id AND l.partner_id = p_partner_id
                                    AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()))) THEN
        verdict := 'NOT_SOLD_OUT'; RETURN NEXT; RETURN;
    END IF;

    INSERT INTO waitlist_entries (campaign_id, partner_id, holder, quantity, metadata, idempotency_key, request_hash)
    VALUES (p_campaign_id, p_partner_id, p_holder, p_quantity, p_metadata, p_idempotency_key, p_request_hash)
    RETURNING 'OK', id INTO verdict, entry_id;
    RETURN NEXT;
END
$$;
