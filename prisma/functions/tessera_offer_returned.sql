-- Where a WAITLIST_FIRST campaign's returned tickets go. Every path
-- that returns a ticket there leaves it RETURNED (tessera_returned_ticket, tessera_lapse_allotments)
-- and calls this next: a release and leaveWaitlist right after their own statement, the sweeper
-- after the holds and offers it expired and the allotments it lapsed — and, every interval, for any
-- campaign that still has RETURNED tickets (a caller that died between the two). RETURNED tickets
-- count as held and no claim takes them, so nothing can take a returned ticket in between.
--
-- The walk, in join order: the earliest WAITING entry whose quantity the tickets left cover gets
-- that many of them together (all or nothing) as HELD allocations for waitlist_offer_seconds
-- (never past max_hold_seconds), and is OFFERED; an entry they do not cover keeps waiting while
-- later, smaller ones are served. An entry whose holder is at the campaign's perHolderLimit, or whose
-- partner is at its quota, is passed over this time and keeps its place (tessera_claim_gate decides,
-- as for a claim). What no entry takes goes back to the pool (AVAILABLE) at once — never held back
-- for a larger entry later. A campaign that is not open offers nothing: its tickets go to the pool.
--
-- Locks, in this order (tessera_lock): the campaign gate (shared); the campaign's waitlist
-- lock (exclusive), which tessera_join_waitlist takes too — so an entry either
-- joined before this walk (and is in it) or joins after it, when the tickets it did not take are
-- AVAILABLE and the join answers NOT_SOLD_OUT; then the RETURNED tickets (SKIP LOCKED: those
-- of a transaction still running are its own to offer); then, per entry, the holder lock and the
-- quota row (tessera_claim_gate), and the entry's row (which leaveWaitlist locks before it leaves).
-- No claim waits for a RETURNED ticket or an entry, and no claim takes the waitlist lock.
--
-- The allocations are recorded (and counted) by tessera_record_allocations, and announced as one
-- WAITLIST_OFFERED event to the entry's partner's endpoints and the operator's, with the entry and
-- its allocations.
-- (Citus: offered_at is read into a variable before the entry's UPDATE — Citus refuses a VOLATILE
-- function in an UPDATE of a distributed table; every statement names the campaign in every table.)
CREATE OR REPLACE FUNCTION "tessera_offer_returned"(p_campaign_id UUID) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    cp campaigns%ROWTYPE;
    pool BIGINT[];
    give BIGINT[];
    e RECORD;
    verdict TEXT;
    expires TIMESTAMPTZ;
    v_now TIMESTAMPTZ;
    offered INTEGER := 0;
    v_taken BIGINT[];
    v_codes TEXT[];
    v_made JSONB;
BEGIN
    SELECT * INTO cp FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND OR cp.release_policy <> 'WAITLIST_FIRST' THEN
        RETURN 0;
    END IF;
    PERFORM tessera_lock('campaign', p_campaign_id::text, true);
    PERFORM tessera_lock('waitlist', p_campaign_id::text);

    SELECT array_agg(x.id ORDER BY x.pick_order) INTO pool
      FROM (SELECT t.id, t.pick_order FROM tickets t
             WHERE t.campaign_id = p_campaign_id AND t.status = 'RETURNED'
               FOR UPDATE SKIP LOCKED) x;
    IF pool IS NULL THEN
        RETURN 0;
    END IF;

    SELECT * INTO cp FROM campaigns WHERE id = p_campaign_id; -- read again after the locks
    IF cp.status = 'OPEN'
       AND (cp.opens_at IS NULL OR clock_timestamp() >= cp.opens_at)
       AND (cp.closes_at IS NULL OR clock_timestamp() < cp.closes_at) THEN
        FOR e IN
            SELECT w.id, w.partner_id, w.holder, w.quantity, w.metadata FROM waitlist_entries w
             WHERE w.campaign_id = p_campaign_id AND w.status = 'WAITING'
             ORDER BY w.seq
        LOOP
            EXIT WHEN cardinality(pool) = 0;
            CONTINUE WHEN e.quantity > cardinality(pool);
            SELECT g.verdict INTO verdict FROM tessera_claim_gate(p_campaign_id, e.partner_id, e.holder, NULL, e.quantity, e.quantity, true) g;
            CONTINUE WHEN verdict <> 'OK';
            -- The entry's row lock before anything is written for it: a leaveWaitlist that holds it
            -- (or has just committed) makes it no longer WAITING, and it is passed over.
            v_now := clock_timestamp();
            UPDATE waitlist_entries w SET status = 'OFFERED', offered_at = v_now
             WHERE w.campaign_id = p_campaign_id AND w.id = e.id AND w.status = 'WAITING';
            CONTINUE WHEN NOT FOUND;

            give := pool[1:e.quantity];
            pool := pool[e.quantity + 1:];
            expires := clock_timestamp() + make_interval(secs => LEAST(cp.waitlist_offer_seconds, COALESCE(cp.max_hold_seconds, cp.waitlist_offer_seconds)));

            WITH offered_tickets AS (
                UPDATE tickets t SET status = 'HELD'
                 WHERE t.campaign_id = p_campaign_id AND t.id = ANY(give) AND t.status = 'RETURNED'
                RETURNING t.id, t.code
            )
            SELECT array_agg(h.id ORDER BY h.id), array_agg(h.code ORDER BY h.id) INTO v_taken, v_codes FROM offered_tickets h;

            -- Announced as one WAITLIST_OFFERED event below, not as HOLD_CREATED per allocation.
            SELECT jsonb_agg(jsonb_build_object(
                     'id', m.id, 'campaignId', p_campaign_id, 'partnerId', e.partner_id,
                     'holder', e.holder, 'sequence', m.sequence, 'status', 'HELD',
                     'expiresAt', to_char(m.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                     'ticket', jsonb_build_object('code', v_codes[m.n])) ORDER BY m.sequence)
              INTO v_made
              FROM tessera_record_allocations(p_campaign_id, 'HELD', expires, v_taken, array_fill(e.partner_id, ARRAY[COALESCE(cardinality(v_taken), 0)]),
                                              array_fill(e.holder, ARRAY[COALESCE(cardinality(v_taken), 0)]), array_fill(e.metadata, ARRAY[COALESCE(cardinality(v_taken), 0)]),
                                              NULL, NULL, NULL, NULL, array_fill(e.id, ARRAY[COALESCE(cardinality(v_taken), 0)]), NULL, false) m;

            IF EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled) THEN
                INSERT INTO webhook_events (type, campaign_id, partner_id, data, created_at)
                VALUES ('WAITLIST_OFFERED', p_campaign_id, e.partner_id,
                        jsonb_build_object('entry', jsonb_build_object('id', e.id, 'campaignId', p_campaign_id, 'holder', e.holder),
                                           'allocations', v_made),
                        clock_timestamp());
            END IF;
            offered := offered + 1;
        END LOOP;
    END IF;

    UPDATE tickets t SET status = 'AVAILABLE'
     WHERE t.campaign_id = p_campaign_id AND t.id = ANY(pool) AND t.status = 'RETURNED';
    RETURN offered;
END
$$;
