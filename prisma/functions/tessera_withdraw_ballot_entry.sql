-- withdrawBallotEntry (src/db/ballots.ts): an ENTERED entry becomes WITHDRAWN, before the
-- draw only; the holder may then enter again. Locks: the campaign gate (shared: the draw, which
-- holds it exclusive, either drew the entry or comes after the withdrawal), then the entry's row.
--
-- Verdicts: OK (also for an entry already WITHDRAWN), ENTRY_NOT_FOUND (unknown, or another
-- partner's when p_partner_id is given), ENTRIES_CLOSED (drawn: WON, LOST or LAPSED).
-- The clock is read into a variable first: Citus refuses a VOLATILE function in an UPDATE of a
-- distributed table.
-- (PL/pgSQL, checked when it runs: it names a table migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_withdraw_ballot_entry"(p_entry_id UUID, p_partner_id UUID)
  RETURNS TABLE (verdict TEXT, campaign_id UUID)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_campaign UUID;
    v_status TEXT;
    v_now TIMESTAMPTZ;
BEGIN
    SELECT e.campaign_id INTO v_campaign FROM ballot_entries e
     WHERE e.id = p_entry_id AND (p_partner_id IS NULL OR e.partner_id = p_partner_id);
    IF NOT FOUND THEN
        verdict := 'ENTRY_NOT_FOUND'; RETURN NEXT; RETURN;
    END IF;
    PERFORM tessera_lock('campaign', v_campaign::text, true);
    SELECT e.status::text INTO v_status FROM ballot_entries e
     WHERE e.campaign_id = v_campaign AND e.id = p_entry_id FOR UPDATE;
    IF v_status = 'ENTERED' THEN
        v_now := clock_timestamp();
        UPDATE ballot_entries e SET status = 'WITHDRAWN', withdrawn_at = v_now, ended_at = v_now
         WHERE e.campaign_id = v_campaign AND e.id = p_entry_id;
        verdict := 'OK';
    ELSIF v_status = 'WITHDRAWN' THEN
        verdict := 'OK';
    ELSE
        verdict := 'ENTRIES_CLOSED';
    END IF;
    campaign_id := v_campaign;
    RETURN NEXT;
END
$$;
