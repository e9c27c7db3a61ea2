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
-- (PL/pgSQL, checked when it runs: it names a table a migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_lapse_allotments"() RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r RECORD;
    freed INTEGER;
    left_over BOOLEAN;
    lapsed INTEGER := 0;
BEGIN
    FOR r IN
        SELECT l.campaign_id, l.partner_id FROM allotments l
         WHERE l.lapsed_at IS NULL AND l.lapses_at <= clock_timestamp()
         ORDER BY l.lapses_at
         LIMIT 100
    LOOP
        PERFORM pg_advisory_xact_lock_shared(1, hashtext(r.campaign_id::text));
        PERFORM 1 FROM allotments l
         WHERE l.campaign_id = r.campaign_id AND l.partner_id = r.partner_id
           AND l.lapsed_at IS NULL AND l.lapses_at <= clock_timestamp()
           FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;

        WITH free AS (
            UPDATE tickets t
               SET status = (SELECT CASE WHEN cp.release_policy = 'WAITLIST_FIRST' THEN 'RETURNED' ELSE 'AVAILABLE' END::ticket_status
                               FROM campaigns cp WHERE cp.id = r.campaign_id),
                   allotted_to = NULL
             WHERE t.campaign_id = r.campaign_id
               AND t.id = ANY(ARRAY(SELECT x.id FROM tickets x
                                     WHERE x.campaign_id = r.campaign_id AND x.status = 'ALLOTTED' AND x.allotted_to = r.partner_id
                                       FOR UPDATE SKIP LOCKED))
               AND t.status = 'ALLOTTED'
            RETURNING 1
        )
        SELECT count(*) INTO freed FROM free;
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
                              WHERE t.campaign_id = r.campaign_id AND t.allotted_to = r.partner_id
                                AND NOT a.from_allotment AND a.status IN ('ACTIVE', 'HELD'));
        END IF;
        UPDATE allotments l
           SET returned = COALESCE(l.returned, 0) + freed,
               lapsed_at = CASE WHEN left_over THEN NULL ELSE clock_timestamp() END,
               size = CASE WHEN left_over THEN l.size
                           ELSE COALESCE(l.returned, 0) + freed
                                + (SELECT count(*) FROM allocations a
                                    WHERE a.campaign_id = r.campaign_id AND a.partner_id = r.partner_id AND a.from_allotment
                                      AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp()))) END,
               updated_at = clock_timestamp()
         WHERE l.campaign_id = r.campaign_id AND l.partner_id = r.partner_id;
        CONTINUE WHEN left_over;

        lapsed := lapsed + 1;
        IF EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled) THEN
            INSERT INTO webhook_events (type, campaign_id, partner_id, data, created_at)
            SELECT 'ALLOTMENT_LAPSED', r.campaign_id, r.partner_id,
                   tessera_campaign_event_data(r.campaign_id, cp.status::text)
                     || jsonb_build_object('partnerId', r.partner_id, 'returned', l.returned),
                   clock_timestamp()
              FROM campaigns cp, allotments l
             WHERE cp.id = r.campaign_id AND l.campaign_id = r.campaign_id AND l.partner_id = r.partner_id;
        END IF;
    END LOOP;
    RETURN lapsed;
END
$$;
