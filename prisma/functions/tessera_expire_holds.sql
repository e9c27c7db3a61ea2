-- The sweeper (src/sweeper.ts, src/db/expireHolds.ts, every HOLD_SWEEP_INTERVAL_MS): returns
-- expired holds' tickets to the pool, to the allotment they were drawn from, or retires them (VOID)
-- — tessera_returned_ticket decides — a batch per campaign, SKIP LOCKED so that it never waits for
-- (or races) a claim taking over the same hold — whoever locks the hold first ends it, exactly once
-- (docs/CORRECTNESS.md §9).
--
-- Lock order (docs/CORRECTNESS.md §5): the campaign gate (shared) before any row, as every
-- statement that changes which allocations are live takes it; then the hold's allocation row, then
-- its ticket. Last, the quota credits are folded into `live`: credits deleted before the quota rows
-- are updated, the same order as setPartnerQuota (src/db/partnerQuota.ts).
--
-- Shaped for Citus (docs/SCALING.md, "Citus"): the campaigns are found first (one query over every
-- campaign), then each statement names one campaign in every table it touches, so it runs on that
-- campaign's node; the clock is read into a variable (Citus refuses a VOLATILE function in an UPDATE
-- of a distributed table); where a ticket goes is decided in the statement itself, by the rule of
-- tessera_returned_ticket (a function called from a statement that runs on a shard cannot query a
-- table there); the credits are folded campaign by campaign.
CREATE OR REPLACE FUNCTION "tessera_expire_holds"(p_batch INTEGER) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c UUID;
    policy TEXT;
    v_now TIMESTAMPTZ;
    swept INTEGER := 0;
    n INTEGER;
BEGIN
    FOR c IN
        SELECT DISTINCT a.campaign_id FROM allocations a
         WHERE a.status = 'HELD' AND a.expires_at <= clock_timestamp()
         LIMIT 100
    LOOP
        PERFORM tessera_lock('campaign', c::text, true);
        -- tessera_returned_ticket's rule, in the statement (the policy never changes).
        policy := (SELECT cp.release_policy::text FROM campaigns cp WHERE cp.id = c);
        v_now := clock_timestamp();
        WITH expired AS (
            SELECT a.id FROM allocations a
             WHERE a.campaign_id = c AND a.status = 'HELD' AND a.expires_at <= v_now
             ORDER BY a.expires_at
             LIMIT p_batch
             FOR UPDATE SKIP LOCKED
        ),
        lapsed AS (
            UPDATE allocations a SET status = 'EXPIRED'
              FROM expired e
             WHERE a.campaign_id = c AND a.id = e.id AND a.status = 'HELD'
            RETURNING a.ticket_id, a.partner_id, a.from_allotment
        ),
        destined AS (
            SELECT l.ticket_id, l.partner_id,
                   CASE WHEN policy = 'VOID' THEN 'VOID'::ticket_status
                        WHEN l.from_allotment AND EXISTS (SELECT 1 FROM allotments x
                                                           WHERE x.campaign_id = c AND x.partner_id = l.partner_id
                                                             AND (x.lapses_at IS NULL OR x.lapses_at > v_now)) THEN 'ALLOTTED'::ticket_status
                        WHEN policy = 'WAITLIST_FIRST' THEN 'RETURNED'::ticket_status
                        ELSE 'AVAILABLE'::ticket_status END AS status
              FROM lapsed l
        )
        UPDATE tickets t
           SET status = d.status, allotted_to = CASE WHEN d.status = 'ALLOTTED' THEN d.partner_id END
          FROM destined d
         WHERE t.campaign_id = c AND t.id = d.ticket_id AND t.status = 'HELD';
        GET DIAGNOSTICS n = ROW_COUNT;
        swept := swept + n;
    END LOOP;

    -- Fold the quota credits into `live`, campaign by campaign. Deleting before updating, the same
    -- order as setPartnerQuota: credits, then the quota row.
    FOR c IN SELECT DISTINCT k.campaign_id FROM partner_quota_credits k LOOP
        WITH folded AS (
            DELETE FROM partner_quota_credits k WHERE k.campaign_id = c RETURNING k.partner_id
        )
        UPDATE partner_quotas q SET live = q.live - f.n
          FROM (SELECT folded.partner_id, count(*) AS n FROM folded GROUP BY folded.partner_id) f
         WHERE q.campaign_id = c AND q.partner_id = f.partner_id;
    END LOOP;
    RETURN swept;
END
$$;
