-- Allotments that reach their lapses_at (src/db/allotments.ts), run by the sweeper of every instance
-- (src/sweeper.ts, every HOLD_SWEEP_INTERVAL_MS). From lapses_at on, any claim may already take an
-- allotment's unused tickets (the second look, src/db/pickTickets.ts: `lapsed_allotted`); this
-- writes the lapse down: the tickets still ALLOTTED go back to the pool (never VOID: an unused
-- allotment was never allocated) — under WAITLIST_FIRST to the waitlist first: RETURNED, for the
-- sweeper's tessera_offer_returned right after (claims take none of them meanwhile), `returned` counts them, and once none is left the allotment gets
-- lapsed_at and its ALLOTMENT_LAPSED event — once: all under the allotment row's lock, which two
-- sweepers never share (SKIP LOCKED). A ticket a claim has locked meanwhile is the claim's, or comes
-- back to the next sweep.
--
-- Lock order (docs/CORRECTNESS.md §5): the campaign gate (shared), then the allotment row, then
-- ticket rows — setPartnerAllotment takes the gate exclusive before it touches either.
--
-- Shaped for Citus (docs/SCALING.md, "Citus"): every statement names the allotment's campaign in
-- every table it touches (one node); what is written is read first — the tickets to free, the
-- policy, the counts, the event's data — and the clock is a variable (Citus refuses VOLATILE
-- functions, and subqueries of other tables, in an UPDATE of a distributed table).
-- (PL/pgSQL, checked when it runs: it names a table a migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_lapse_allotments"() RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r RECORD;
    freed INTEGER;
    left_over BOOLEAN;
    lapsed INTEGER := 0;
    to_status ticket_status;
    ids BIGINT[];
    drawn_live INTEGER;
    v_now TIMESTAMPTZ;
    v_data JSONB;
    cp_status TEXT;
    n_returned INTEGER;
BEGIN
    FOR r IN
        SELECT l.campaign_id, l.partner_id FROM allotments l
         WHERE l.lapsed_at IS NULL AND l.lapses_at <= clock_timestamp()
         ORDER BY l.lapses_at
         LIMIT 100
    LOOP
        PERFORM tessera_lock('campaign', r.campaign_id::text, true);
        PERFORM 1 FROM allotments l
         WHERE l.campaign_id = r.campaign_id AND l.partner_id = r.partner_id
           AND l.lapsed_at IS NULL AND l.lapses_at <= clock_timestamp()
           FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;

        to_status := CASE WHEN (SELECT cp.release_policy FROM campaigns cp WHERE cp.id = r.campaign_id) = 'WAITLIST_FIRST'
                          THEN 'RETURNED'::ticket_status ELSE 'AVAILABLE'::ticket_status END;
        ids := ARRAY(SELECT x.id FROM tickets x
                      WHERE x.campaign_id = r.campaign_id AND x.status = 'ALLOTTED' AND x.allotted_to = r.partner_id
                        FOR UPDATE SKIP LOCKED);
        UPDATE tickets t SET status = to_status, allotted_to = NULL
         WHERE t.campaign_id = r.campaign_id AND t.id = ANY(ids) AND t.status = 'ALLOTTED';
        GET DIAGNOSTICS freed = ROW_COUNT;
        left_over := EXISTS (SELECT 1 FROM tickets x
                              WHERE x.campaign_id = r.campaign_id AND x.status = 'ALLOTTED' AND x.allotted_to = r.partner_id);

        -- What the lapse returned counts, besides what this sweep freed, the tickets claims took from
        -- lapses_at on, before any sweep — another partner's, or the owner's own, no longer drawn
        -- from the allotment: from_allotment is false (they keep allotted_to while they are live).
        -- Once lapsed, size is what it held at the lapse: what was drawn from it and is still live,
        -- and what it returned.
        IF NOT left_over THEN
            freed := freed + (SELECT count(*) FROM tickets t
                               JOIN allocations a ON a.campaign_id = t.campaign_id AND a.ticket_id = t.id
                              WHERE t.campaign_id = r.campaign_id AND a.campaign_id = r.campaign_id
                                AND t.allotted_to = r.partner_id
                                AND NOT a.from_allotment AND a.status IN ('ACTIVE', 'HELD'));
            v_now := clock_timestamp();
            drawn_live := (SELECT count(*) FROM allocations a
                            WHERE a.campaign_id = r.campaign_id AND a.partner_id = r.partner_id AND a.from_allotment
                              AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > v_now)));
        ELSE
            v_now := clock_timestamp();
        END IF;
        UPDATE allotments l
           SET returned = COALESCE(l.returned, 0) + freed,
               lapsed_at = CASE WHEN left_over THEN NULL ELSE v_now END,
               size = CASE WHEN left_over THEN l.size ELSE COALESCE(l.returned, 0) + freed + drawn_live END,
               updated_at = v_now
         WHERE l.campaign_id = r.campaign_id AND l.partner_id = r.partner_id;
        CONTINUE WHEN left_over;

        lapsed := lapsed + 1;
        IF EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled) THEN
            -- Read first, then passed: a statement that names a table and calls the function would
            -- run the function on a shard, where it cannot query (Citus).
            cp_status := (SELECT cp.status::text FROM campaigns cp WHERE cp.id = r.campaign_id);
            n_returned := (SELECT l.returned FROM allotments l WHERE l.campaign_id = r.campaign_id AND l.partner_id = r.partner_id);
            v_data := tessera_campaign_event_data(r.campaign_id, cp_status)
                      || jsonb_build_object('partnerId', r.partner_id, 'returned', n_returned);
            INSERT INTO webhook_events (type, campaign_id, partner_id, data, created_at)
            VALUES ('ALLOTMENT_LAPSED', r.campaign_id, r.partner_id, v_data, clock_timestamp());
        END IF;
    END LOOP;
    RETURN lapsed;
END
$$;
