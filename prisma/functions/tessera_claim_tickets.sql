-- The claim in general, alone in its transaction: passes the campaign gate, takes p_quantity tickets — the claimer's own allotted ones
-- first, then AVAILABLE ones, then tickets of lapsed allotments, then tickets whose hold expired —
-- marks them ALLOCATED (a claim) or HELD (a hold, p_hold_seconds long) and records their
-- allocations (tessera_record_allocations), all or nothing. A claimTicket's second look, holdTicket
-- and claimTickets run it.
--
-- What it locks, in this order (the one order of tessera_lock):
--   1. tessera_claim_gate: advisory locks — the campaign gate (shared), the idempotency key, the
--      holder — and the partner's quota row; then it reads the campaign and counts with a fresh
--      snapshot. Nothing below runs unless the gate passed, so no ticket or hold is locked before.
--   2. ticket rows: the claimer's ALLOTTED ones (its allotment is drawn on first; `drawn` while it
--      has not lapsed), then AVAILABLE ones from the random start p_start (wrapping round below it),
--      FOR UPDATE SKIP LOCKED — concurrent claimers never wait on each other — or, with p_wait,
--      FOR UPDATE from the start of the index (p_start 0: one order for every waiter, no deadlock);
--   3. only for what is still missing, SKIP LOCKED always: tickets of other partners' allotments that
--      have lapsed (claimable from lapses_at on, before the sweeper returns them — except under
--      WAITLIST_FIRST, where the sweeper offers them to the waitlist first, as it does the owner's own
--      once lapsed), then holds that have expired (only under the POOL release policy: VOID retires
--      their tickets and WAITLIST_FIRST offers them to the waitlist first, both through the sweeper;
--      never another partner's hold drawn from its live allotment: that ticket goes back to the
--      allotment). An expired hold's ticket is claimable from the instant it expires, and whoever
--      locks the hold first (a claim, or the sweeper) ends it, exactly once.
--
-- Why the pick starts at a random pick_order (tessera_random_pick_order gives every ticket one):
--   - every claimer starting at the front of the AVAILABLE index would skip over the same locked
--     rows and, as the pool fills, walk the same run of dead index entries left by earlier claims
--     until a VACUUM (3,000 → 372 claims/s at 99% fill). From a random
--     point the run of dead entries before a live one is ~1/(1-fill) entries, not fill×N;
--   - pick_order is in no other index, so the planner has no alternative to the partial index
--     whatever the statistics say (test/plan.test.ts).
--
-- The wait (p_wait) is the second look that keeps SOLD_OUT honest: when
-- SKIP LOCKED found too few while tickets still look AVAILABLE, those are locked by claims in flight
-- that may roll back; waiting for each takes what comes back. It never waits on a hold.
--
-- Each UPDATE re-checks the row's status: under READ COMMITTED a row that was waited for is re-checked
-- only against the WHERE of the statement that locks it. An expired hold
-- being taken over is ended first, so that the unique index of live allocations per ticket sees it
-- gone before the new allocation is inserted.
--
-- Returns one row per allocation made (verdict OK), or else one row: the gate's verdict (PRIOR with
-- the key's earlier allocation), or OK with no allocation and why (`contended`: more looked
-- claimable, locked by claims in flight; `sold_out`: by tessera_sold_out, the one definition the
-- stats and CAMPAIGN_SOLD_OUT use; `allotted_elsewhere`: other partners' live allotments hold
-- tickets back).
--
-- Every statement names the campaign, so on Citus the whole call runs on the node holding it.
DROP FUNCTION IF EXISTS "tessera_claim_tickets"(UUID, UUID, TEXT, JSONB, TEXT, TEXT, INTEGER, INTEGER, INTEGER, BOOLEAN);
CREATE OR REPLACE FUNCTION "tessera_claim_tickets"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_metadata JSONB,
    p_idempotency_key TEXT,
    p_request_hash TEXT,
    p_quantity INTEGER,
    p_hold_seconds INTEGER,
    p_start INTEGER,
    p_wait BOOLEAN,
    p_key_everywhere BOOLEAN
) RETURNS TABLE (
    verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID,
    id UUID, campaign_id UUID, ticket_id BIGINT, partner_id UUID, holder TEXT, metadata JSONB,
    idempotency_key TEXT, request_hash TEXT, status allocation_status, sequence BIGINT,
    allocated_at TIMESTAMPTZ, expires_at TIMESTAMPTZ, released_at TIMESTAMPTZ, confirmed_at TIMESTAMPTZ,
    request_index INTEGER, ticket_code TEXT,
    campaign_name TEXT, campaign_status campaign_status, campaign_opens_at TIMESTAMPTZ,
    campaign_closes_at TIMESTAMPTZ, campaign_per_holder_limit INTEGER, campaign_created_at TIMESTAMPTZ,
    contended BOOLEAN, sold_out BOOLEAN, allotted_elsewhere BOOLEAN
)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_policy TEXT;
    v_own_live BOOLEAN;
    v_own BIGINT[] := '{}';
    v_available BIGINT[] := '{}';
    v_lapsed_allotted BIGINT[] := '{}';
    v_expired_ids UUID[] := '{}';
    v_expired_tickets BIGINT[] := '{}';
    v_expired_drawn BOOLEAN[] := '{}';
    v_more BIGINT[];
    v_need INTEGER;
    v_ended INTEGER;
    v_taken BIGINT[];
    v_codes TEXT[];
    v_status allocation_status := CASE WHEN p_hold_seconds IS NULL THEN 'ACTIVE' ELSE 'HELD' END;
    v_expires TIMESTAMPTZ;
    v_from_allotment BOOLEAN[] := '{}';
    v_cp campaigns%ROWTYPE;
    r RECORD;
    i INTEGER;
BEGIN
    SELECT g.verdict, g.prior_campaign_id, g.prior_allocation_id INTO verdict, prior_campaign_id, prior_allocation_id
      FROM tessera_claim_gate(p_campaign_id, p_partner_id, p_holder, p_idempotency_key, p_quantity, p_quantity, p_key_everywhere) g;
    IF verdict <> 'OK' THEN RETURN NEXT; RETURN; END IF;

    SELECT cp.release_policy::text INTO v_policy FROM campaigns cp WHERE cp.id = p_campaign_id;
    SELECT COALESCE(l.lapses_at IS NULL OR l.lapses_at > clock_timestamp(), false) INTO v_own_live
      FROM allotments l WHERE l.campaign_id = p_campaign_id AND l.partner_id = p_partner_id;
    v_own_live := COALESCE(v_own_live, false);

    -- The claimer's own allotted tickets; once its allotment lapsed, under WAITLIST_FIRST they go to
    -- the waitlist first, even the owner's.
    IF v_own_live OR v_policy <> 'WAITLIST_FIRST' THEN
        IF p_wait THEN
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_own FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = p_campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to = p_partner_id
                 ORDER BY t.pick_order LIMIT p_quantity FOR UPDATE) s;
        ELSE
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_own FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = p_campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to = p_partner_id
                 ORDER BY t.pick_order LIMIT p_quantity FOR UPDATE SKIP LOCKED) s;
        END IF;
    END IF;

    -- AVAILABLE tickets from the start, then wrapping round below it.
    v_need := p_quantity - cardinality(v_own);
    IF v_need > 0 THEN
        IF p_wait THEN
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_available FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE' AND t.pick_order >= p_start
                 ORDER BY t.pick_order LIMIT v_need FOR UPDATE) s;
        ELSE
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_available FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE' AND t.pick_order >= p_start
                 ORDER BY t.pick_order LIMIT v_need FOR UPDATE SKIP LOCKED) s;
        END IF;
        v_need := v_need - cardinality(v_available);
    END IF;
    IF v_need > 0 AND p_start > 0 THEN
        IF p_wait THEN
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_more FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE' AND t.pick_order < p_start
                 ORDER BY t.pick_order LIMIT v_need FOR UPDATE) s;
        ELSE
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_more FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE' AND t.pick_order < p_start
                 ORDER BY t.pick_order LIMIT v_need FOR UPDATE SKIP LOCKED) s;
        END IF;
        v_available := v_available || v_more;
        v_need := v_need - cardinality(v_more);
    END IF;

    -- Other partners' allotments that have lapsed; never waits, even in the waiting look: another
    -- partner's own pick locks these first.
    IF v_need > 0 AND v_policy <> 'WAITLIST_FIRST' THEN
        SELECT COALESCE(array_agg(s.id), '{}') INTO v_lapsed_allotted FROM (
            SELECT t.id FROM tickets t
             WHERE t.campaign_id = p_campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to <> p_partner_id
               AND t.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                              WHERE l.campaign_id = p_campaign_id AND l.lapses_at <= clock_timestamp()))
             ORDER BY t.pick_order LIMIT v_need FOR UPDATE SKIP LOCKED) s;
        v_need := v_need - cardinality(v_lapsed_allotted);
    END IF;

    -- Expired holds (POOL only).
    IF v_need > 0 AND v_policy = 'POOL' THEN
        SELECT COALESCE(array_agg(s.id), '{}'), COALESCE(array_agg(s.ticket_id), '{}'), COALESCE(array_agg(s.drawn), '{}')
          INTO v_expired_ids, v_expired_tickets, v_expired_drawn
          FROM (SELECT a.id, a.ticket_id, a.from_allotment AND a.partner_id = p_partner_id AND v_own_live AS drawn
                  FROM allocations a
                 WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
                   -- another partner's hold drawn from its live allotment returns to that allotment, not to us
                   AND (NOT a.from_allotment OR a.partner_id = p_partner_id
                        OR NOT EXISTS (SELECT 1 FROM allotments l WHERE l.campaign_id = p_campaign_id AND l.partner_id = a.partner_id
                                          AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())))
                 ORDER BY a.expires_at, a.id
                 LIMIT v_need
                 FOR UPDATE OF a SKIP LOCKED) s;
        v_need := v_need - cardinality(v_expired_ids);
    END IF;

    IF v_need = 0 THEN
        -- The expired holds taken over are ended first.
        IF cardinality(v_expired_ids) > 0 THEN
            UPDATE allocations a SET status = 'EXPIRED'
             WHERE a.campaign_id = p_campaign_id AND a.id = ANY(v_expired_ids) AND a.status = 'HELD';
            GET DIAGNOSTICS v_ended = ROW_COUNT;
        ELSE
            v_ended := 0;
        END IF;
        IF v_ended = cardinality(v_expired_ids) THEN
            WITH marked AS (
                UPDATE tickets t
                   SET status = CASE WHEN p_hold_seconds IS NULL THEN 'ALLOCATED'::ticket_status ELSE 'HELD'::ticket_status END
                 WHERE t.campaign_id = p_campaign_id
                   AND t.id = ANY(v_own || v_available || v_lapsed_allotted || v_expired_tickets)
                   AND t.status = CASE WHEN t.id = ANY(v_expired_tickets) THEN 'HELD'::ticket_status
                                       WHEN t.id = ANY(v_own || v_lapsed_allotted) THEN 'ALLOTTED'::ticket_status
                                       ELSE 'AVAILABLE'::ticket_status END
                RETURNING t.id, t.code
            )
            SELECT array_agg(m.id ORDER BY m.id), array_agg(m.code ORDER BY m.id) INTO v_taken, v_codes FROM marked m;
        END IF;
    END IF;

    IF v_taken IS NULL THEN
        -- Nothing taken: why — the three reasons read in ONE statement, so one snapshot decides them
        -- all. Read one after another, a claim committing between two of them (the last allotted
        -- tickets taken, say) showed "not sold out" in the counters' earlier snapshot and "nothing
        -- allotted" in the tickets' later one: ALL_HELD in a sold-out race, with nothing held.
        SELECT
            -- contended: more look claimable than this look could take, locked by claims in flight
            CASE WHEN p_wait THEN false ELSE (
              (SELECT count(*) FROM (SELECT 1 FROM tickets x
                 WHERE x.campaign_id = p_campaign_id AND x.status = 'AVAILABLE'
                 ORDER BY x.pick_order LIMIT p_quantity) s)
            -- this partner's allotted tickets, and those of allotments that have lapsed
            + (SELECT count(*) FROM (SELECT 1 FROM tickets x
                 WHERE x.campaign_id = p_campaign_id AND x.status = 'ALLOTTED'
                   AND (x.allotted_to = p_partner_id
                        OR x.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                      WHERE l.campaign_id = p_campaign_id AND l.lapses_at <= clock_timestamp())))
                   AND (v_policy <> 'WAITLIST_FIRST' OR (x.allotted_to = p_partner_id AND v_own_live))
                 ORDER BY x.pick_order LIMIT p_quantity) s)
            + (SELECT count(*) FROM (SELECT 1 FROM allocations y
                 WHERE y.campaign_id = p_campaign_id AND y.status = 'HELD' AND y.expires_at <= clock_timestamp() AND v_policy = 'POOL'
                 ORDER BY y.expires_at LIMIT p_quantity) s)
            ) >= p_quantity END,
            -- sold out, by the one definition (not asked in the waiting look, which always looks
            -- again). A campaign without tickets is not sold out (it may be loaded while open) but
            -- has nothing to take or to come back either: SOLD_OUT too.
            CASE WHEN p_wait THEN NULL ELSE (
              SELECT COALESCE(sum(c.total), 0) = 0
                     OR tessera_sold_out(sum(c.total)::bigint, sum(c.allocated)::bigint, sum(c.held)::bigint, sum(c.void)::bigint, v_policy)
                FROM campaign_counters c WHERE c.campaign_id = p_campaign_id) END,
            -- other partners' live allotments hold tickets back
            EXISTS (SELECT 1 FROM tickets x
                     WHERE x.campaign_id = p_campaign_id AND x.status = 'ALLOTTED' AND x.allotted_to <> p_partner_id
                       AND x.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                      WHERE l.campaign_id = p_campaign_id AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()))))
            -- another partner's expired hold drawn from its live allotment goes back to that
            -- allotment (counted as allotted, not held: see tessera_campaign_counts)
            OR (v_policy <> 'VOID'
                AND EXISTS (SELECT 1 FROM allocations y
                             WHERE y.campaign_id = p_campaign_id AND y.status = 'HELD' AND y.expires_at <= clock_timestamp()
                               AND y.from_allotment AND y.partner_id <> p_partner_id
                               AND y.partner_id = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                             WHERE l.campaign_id = p_campaign_id AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())))))
          INTO contended, sold_out, allotted_elsewhere;
        RETURN NEXT;
        RETURN;
    END IF;

    -- The allocations, one per ticket taken, in ticket id order (request_index), with their counters
    -- and events.
    SELECT * INTO v_cp FROM campaigns cp WHERE cp.id = p_campaign_id;
    campaign_name := v_cp.name; campaign_status := v_cp.status; campaign_opens_at := v_cp.opens_at;
    campaign_closes_at := v_cp.closes_at; campaign_per_holder_limit := v_cp.per_holder_limit; campaign_created_at := v_cp.created_at;
    IF p_hold_seconds IS NOT NULL THEN v_expires := clock_timestamp() + make_interval(secs => p_hold_seconds); END IF;
    FOR i IN 1 .. cardinality(v_taken) LOOP
        v_from_allotment[i] := v_taken[i] = ANY(v_own) AND v_own_live
                               OR COALESCE(v_expired_drawn[array_position(v_expired_tickets, v_taken[i])], false);
    END LOOP;
    campaign_id := p_campaign_id; partner_id := p_partner_id; holder := p_holder; metadata := p_metadata;
    idempotency_key := p_idempotency_key; request_hash := p_request_hash; status := v_status;
    released_at := NULL; confirmed_at := NULL;
    i := cardinality(v_taken);
    FOR r IN SELECT * FROM tessera_record_allocations(p_campaign_id, v_status, v_expires, v_taken, array_fill(p_partner_id, ARRAY[i]),
                                                      array_fill(p_holder, ARRAY[i]), array_fill(p_metadata, ARRAY[i]),
                                                      array_fill(p_idempotency_key, ARRAY[i]), array_fill(p_request_hash, ARRAY[i]),
                                                      NULL, v_from_allotment, NULL, NULL, true) LOOP
        id := r.id; ticket_id := r.ticket_id; sequence := r.sequence; allocated_at := r.allocated_at;
        expires_at := r.expires_at; request_index := r.n - 1; ticket_code := v_codes[r.n];
        RETURN NEXT;
    END LOOP;
END
$$;
