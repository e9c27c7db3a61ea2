-- enterBallot (src/db/ballots.ts): one entry per partner and holder in a BALLOT campaign
-- while it is open, before entriesCloseAt and before the draw.
--
-- Why a function: like the claim gate, it reads after its locks, with a fresh snapshot per
-- statement. Locks, in this order (docs/CORRECTNESS.md §5):
--   1. the campaign gate, shared. drawBallot takes it exclusive: an entry either committed before
--      the draw began (and is drawn) or reads the drawn ballot afterwards (ENTRIES_CLOSED) — none is
--      left out of a draw that has started, none slips in after it;
--   2. the (partner, idempotency key) lock, when a key is given: a second request with the key
--      finds the first's entry;
--   3. the (campaign, partner, holder) lock: two entries for one holder in parallel are checked one
--      after the other, and the second finds the first (ALREADY_ENTERED).
-- Quotas and allotments are not checked here: they limit what an entry can win (the draw).
--
-- Verdicts: OK (entry_id is the new entry), PRIOR (entry_id is the key's entry), ALREADY_ENTERED
-- (entry_id is the holder's entry), CAMPAIGN_NOT_FOUND, CAMPAIGN_NOT_OPEN (DRAFT, CLOSED, outside
-- opensAt–closesAt), ENTRIES_CLOSED (drawn — whatever else holds — or past entriesCloseAt),
-- INVALID_INPUT (not a BALLOT campaign, or quantity above its perHolderLimit). Nothing is written
-- unless OK.
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_enter_ballot"(
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
BEGIN
    PERFORM tessera_lock('campaign', p_campaign_id::text, true);

    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND THEN
        verdict := 'CAMPAIGN_NOT_FOUND'; RETURN NEXT; RETURN;
    END IF;
    IF c.mode <> 'BALLOT' THEN
        verdict := 'INVALID_INPUT'; RETURN NEXT; RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM ballots b WHERE b.campaign_id = p_campaign_id AND b.drawn_at IS NOT NULL) THEN
        verdict := 'ENTRIES_CLOSED'; RETURN NEXT; RETURN;
    END IF;

    IF p_idempotency_key IS NOT NULL THEN
        PERFORM tessera_lock('idempotency_key', p_partner_id::text || ':' || p_idempotency_key);
        SELECT 'PRIOR', e.id, e.campaign_id, e.request_hash INTO verdict, entry_id, prior_campaign_id, prior_request_hash
          FROM ballot_entries e
         WHERE e.partner_id = p_partner_id AND e.idempotency_key = p_idempotency_key
         LIMIT 1;
        IF FOUND THEN RETURN NEXT; RETURN; END IF;
    END IF;

    IF c.status <> 'OPEN'
       OR (c.opens_at IS NOT NULL AND clock_timestamp() < c.opens_at)
       OR (c.closes_at IS NOT NULL AND clock_timestamp() >= c.closes_at) THEN
        verdict := 'CAMPAIGN_NOT_OPEN'; RETURN NEXT; RETURN;
    END IF;
    IF c.entries_close_at IS NOT NULL AND clock_timestamp() >= c.entries_close_at THEN
        verdict := 'ENTRIES_CLOSED'; RETURN NEXT; RETURN;
    END IF;
    IF p_quantity > COALESCE(c.per_holder_limit, 100) THEN
        verdict := 'INVALID_INPUT'; RETURN NEXT; RETURN;
    END IF;

    PERFORM tessera_lock('holder', p_campaign_id::text || ':' || p_partner_id::text || ':' || p_holder);
    SELECT 'ALREADY_ENTERED', e.id INTO verdict, entry_id
      FROM ballot_entries e
     WHERE e.campaign_id = p_campaign_id AND e.partner_id = p_partner_id AND e.holder = p_holder
       AND e.withdrawn_at IS NULL;
    IF FOUND THEN RETURN NEXT; RETURN; END IF;

    INSERT INTO ballot_entries (campaign_id, partner_id, holder, quantity, metadata, idempotency_key, request_hash)
    VALUES (p_campaign_id, p_partner_id, p_holder, p_quantity, p_metadata, p_idempotency_key, p_request_hash)
    RETURNING 'OK', id INTO verdict, entry_id;
    RETURN NEXT;
END
$$;
