-- Where a WAITLIST_FIRST campaign's returned tickets go (src/db/waitlist.ts). Every path
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
-- Locks, in this order (docs/CORRECTNESS.md §5): the campaign gate (shared); the campaign's waitlist
-- lock (advisory class 6, exclusive), which tessera_join_waitlist takes too — so an entry either
-- joined before this walk (and is in it) or joins after it, when the tickets it did not take are
-- AVAILABLE and the join answers NOT_SOLD_OUT; then the RETURNED tickets (SKIP LOCKED: those
-- of a transaction still running are its own to offer); then, per entry, the holder lock and the
-- quota row (tessera_claim_gate), and the entry's row (which leaveWaitlist locks before it leaves).
-- No claim waits for a RETURNED ticket or an entry, and no claim takes lock 6.
--
-- Counted like a claim's inserts (src/db/countAllocations.ts): held per campaign and per partner in
-- this backend's slot, and the quota's live. Announced as WAITLIST_OFFERED to the entry's partner's
-- endpoints and the operator's, with the entry and its allocations (docs/WEBHOOKS.md).
-- (Citus: offered_at is read into a variable before the entry's UPDATE — Citus refuses a VOLATILE
-- function in an UPDATE of a distributed table; every statement names the campaign in every table.)
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
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
BEGIN
    SELECT * INTO cp FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND OR cp.release_policy <> 'WAITLIST_FIRST' THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(1, hashtext(p_campaign_id::text));
    PERFORM pg_advisory_xact_lock(6, hashtext(p_campaign_id::text));

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
            SELECT g.verdict INTO verdict FROM tessera_claim_gate(p_campaign_id, e.partner_id, e.holder, NULL, e.quantity, e.quantity) g;
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
            ),
            made AS (
                INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata, status,
                                         expires_at, request_index, waitlist_entry_id)
                SELECT p_campaign_id, h.id, e.partner_id, e.holder, e.metadata, 'HELD',
                       expires, (row_number() OVER (ORDER BY h.id) - 1)::integer, e.id
                  FROM offered_tickets h
                RETURNING id, ticket_id, sequence, expires_at
            ),
            counted AS (
                INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held)
                SELECT p_campaign_id, pg_backend_pid(), 0, count(*) FROM made
                ON CONFLICT (campaign_id, slot) DO UPDATE SET held = c.held + EXCLUDED.held
            ),
            counted_partners AS (
                INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
                SELECT p_campaign_id, e.partner_id, pg_backend_pid(), 0, count(*) FROM made
                ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET held = c.held + EXCLUDED.held
            ),
            counted_quota AS (
                UPDATE partner_quotas q SET live = q.live + (SELECT count(*) FROM made)
                 WHERE q.campaign_id = p_campaign_id AND q.partner_id = e.partner_id
            )
            INSERT INTO webhook_events (type, campaign_id, partner_id, data, created_at)
            SELECT 'WAITLIST_OFFERED', p_campaign_id, e.partner_id,
                   jsonb_build_object(
                     'entry', jsonb_build_object('id', e.id, 'campaignId', p_campaign_id, 'holder', e.holder),
                     'allocations', (SELECT jsonb_agg(jsonb_build_object(
                                        'id', m.id, 'campaignId', p_campaign_id, 'partnerId', e.partner_id,
                                        'holder', e.holder, 'sequence', m.sequence, 'status', 'HELD',
                                        'expiresAt', to_char(m.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                        'ticket', jsonb_build_object('code', h.code)) ORDER BY m.sequence)
                                       FROM made m JOIN offered_tickets h ON h.id = m.ticket_id)),
                   clock_timestamp()
             WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled);
            offered := offered + 1;
        END LOOP;
    END IF;

    UPDATE tickets t SET status = 'AVAILABLE'
     WHERE t.campaign_id = p_campaign_id AND t.id = ANY(pool) AND t.status = 'RETURNED';
    RETURN offered;
END
$$;
