-- leaveWaitlist (src/db/waitlist.ts): a WAITING entry becomes LEFT; an OFFERED one releases
-- the holds of its offer (their tickets RETURNED: the caller offers them next, tessera_offer_returned)
-- and becomes LEFT through tessera_settle_waitlist_entry. Confirmed allocations stay the holder's.
--
-- Locks, in this order (docs/CORRECTNESS.md §5): the campaign gate (shared); the entry row — an
-- offer that is making this entry OFFERED holds it, and the entry is then read afresh once that has
-- committed; then the offer's allocations, SKIP LOCKED: one being confirmed or released meanwhile is
-- that statement's; then their tickets. Never the waitlist lock: an offer holds it while it waits
-- for the entry row.
--
-- Verdicts: OK (left; released counts the holds released), NOT_WAITLISTED (no longer WAITING or
-- OFFERED), ENTRY_NOT_FOUND (no such entry, or another partner's: p_partner_id null is the admin).
--
-- Shaped for Citus (docs/SCALING.md, "Citus"): after the look-up of the entry's campaign, every
-- statement names that campaign in every table (one node); the clock is a variable (Citus refuses
-- VOLATILE functions in an UPDATE of a distributed table); the holds to release are locked by a
-- statement of their own; where each ticket goes is decided in the statement, by the rule of
-- tessera_returned_ticket (a function called from a statement that runs on a shard cannot query a
-- table there).
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_leave_waitlist"(p_entry_id UUID, p_partner_id UUID)
  RETURNS TABLE (verdict TEXT, campaign_id UUID, released INTEGER)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    c UUID;
    s TEXT;
    policy TEXT;
    ids UUID[];
    v_now TIMESTAMPTZ;
BEGIN
    SELECT w.campaign_id INTO c FROM waitlist_entries w
     WHERE w.id = p_entry_id AND (p_partner_id IS NULL OR w.partner_id = p_partner_id);
    IF NOT FOUND THEN
        verdict := 'ENTRY_NOT_FOUND'; RETURN NEXT; RETURN;
    END IF;
    campaign_id := c;
    released := 0;
    PERFORM tessera_lock('campaign', c::text, true);
    SELECT w.status::text INTO s FROM waitlist_entries w WHERE w.campaign_id = c AND w.id = p_entry_id FOR UPDATE;
    IF s = 'WAITING' THEN
        v_now := clock_timestamp();
        UPDATE waitlist_entries w SET status = 'LEFT', ended_at = v_now
         WHERE w.campaign_id = c AND w.id = p_entry_id;
        verdict := 'OK'; RETURN NEXT; RETURN;
    END IF;
    IF s <> 'OFFERED' THEN
        verdict := 'NOT_WAITLISTED'; RETURN NEXT; RETURN;
    END IF;

    v_now := clock_timestamp();
    ids := ARRAY(SELECT x.id FROM allocations x
                  WHERE x.campaign_id = c AND x.waitlist_entry_id = p_entry_id
                    AND x.status = 'HELD' AND x.expires_at > v_now
                    FOR UPDATE SKIP LOCKED);
    -- tessera_returned_ticket's rule, in the statement (the policy never changes).
    policy := (SELECT cp.release_policy::text FROM campaigns cp WHERE cp.id = c);
    v_now := clock_timestamp();
    WITH declined AS (
        UPDATE allocations a SET status = 'RELEASED', released_at = v_now, expires_at = NULL
         WHERE a.campaign_id = c AND a.id = ANY(ids) AND a.status = 'HELD'
        RETURNING a.ticket_id, a.partner_id, a.from_allotment
    ),
    returned AS (
        UPDATE tickets t
           SET status = CASE WHEN policy = 'VOID' THEN 'VOID'::ticket_status
                             WHEN d.from_allotment AND EXISTS (SELECT 1 FROM allotments x
                                                                WHERE x.campaign_id = c AND x.partner_id = d.partner_id
                                                                  AND (x.lapses_at IS NULL OR x.lapses_at > v_now)) THEN 'ALLOTTED'::ticket_status
                             WHEN policy = 'WAITLIST_FIRST' THEN 'RETURNED'::ticket_status
                             ELSE 'AVAILABLE'::ticket_status END
          FROM declined d
         WHERE t.campaign_id = c AND t.id = d.ticket_id AND t.status = 'HELD'
        RETURNING 1
    )
    SELECT count(*) INTO released FROM returned;
    -- An offer whose holds had all been confirmed or had lapsed meanwhile: the entry settled with them.
    v_now := clock_timestamp();
    UPDATE waitlist_entries w SET status = 'LEFT', ended_at = v_now
     WHERE w.campaign_id = c AND w.id = p_entry_id AND w.status = 'OFFERED';
    verdict := 'OK'; RETURN NEXT;
END
$$;
