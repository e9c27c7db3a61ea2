-- extendHold (src/db/extendHold.ts): a HELD allocation's expires_at moved to
-- max(expires_at, now + ttl), never past the hold's cap. Like a confirmation, the check that the hold
-- has not expired and the write are one step against the database clock: the row is locked first and
-- checked under its lock, so a hold that lapsed — or that a claim or the sweeper took over — is never
-- extended. Returns the extended row, or nothing (the caller then reads why not).
--
-- The cap is counted from allocated_at, the hold's creation: allocated_at + the campaign's
-- max_hold_seconds for every hold, and the earlier allocated_at + its window for a waitlist offer's
-- hold (waitlist_offer_seconds: tessera_offer_returned) and a ballot win's (ballot_confirm_seconds,
-- 900 when unset, as the draw and the pass-on count it: tessera_ballot_hold_winners) — so an offer or
-- a win ends by its window however often it is extended, and the next entry does not wait longer.
-- An extension is refused only when it would move expires_at past the cap: an offer's or a win's
-- first expiry is counted from clock_timestamp(), a moment after allocated_at (its transaction's
-- start), so it may lie a little past its cap, and an extension that leaves it there is answered.
-- advanceTestClock moves expires_at but not allocated_at: on a test campaign the cap stays on the
-- real clock.
--
-- A function, with the new expiry computed from the locked row's values: Citus refuses VOLATILE
-- functions in an UPDATE of a distributed table, and STABLE ones (timestamptz + interval is one)
-- applied to its columns. Call it alone in its statement: next to a query of a distributed table,
-- Citus would push the call to a worker.
CREATE OR REPLACE FUNCTION "tessera_extend_hold"(p_campaign_id UUID, p_allocation_id UUID, p_ttl_seconds INTEGER)
  RETURNS SETOF allocations
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    longest INTERVAL;
    offer_window INTERVAL;
    confirm_window INTERVAL;
    held allocations%ROWTYPE;
    v_now TIMESTAMPTZ;
    v_expires TIMESTAMPTZ;
    v_cap TIMESTAMPTZ;
BEGIN
    SELECT make_interval(secs => cp.max_hold_seconds), make_interval(secs => cp.waitlist_offer_seconds),
           make_interval(secs => COALESCE(cp.ballot_confirm_seconds, 900))
      INTO longest, offer_window, confirm_window
      FROM campaigns cp WHERE cp.id = p_campaign_id;
    SELECT * INTO held FROM allocations a
     WHERE a.campaign_id = p_campaign_id AND a.id = p_allocation_id AND a.status = 'HELD'
       FOR UPDATE;
    v_now := clock_timestamp();
    IF held.id IS NULL OR held.expires_at <= v_now THEN
        RETURN;
    END IF;
    v_expires := GREATEST(held.expires_at, v_now + make_interval(secs => p_ttl_seconds));
    -- LEAST ignores NULLs: no max_hold_seconds and no window leave no cap.
    v_cap := held.allocated_at + LEAST(longest,
                 CASE WHEN held.waitlist_entry_id IS NOT NULL THEN offer_window
                      WHEN held.ballot_entry_id IS NOT NULL THEN confirm_window END);
    IF v_cap IS NOT NULL AND v_expires > GREATEST(held.expires_at, v_cap) THEN
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE allocations a SET expires_at = v_expires
     WHERE a.campaign_id = p_campaign_id AND a.id = p_allocation_id AND a.status = 'HELD'
    RETURNING a.*;
END
$$;
