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
CREATE OR REPLACE FUNCTION "tessera_expire_holds"(p_batch INTEGER) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c UUID;
    swept INTEGER := 0;
    n INTEGER;
BEGIN
    FOR c IN
        SELECT DISTINCT a.campaign_id FROM allocations a
         WHERE a.status = 'HELD' AND a.expires_at <= clock_timestamp()
         LIMIT 100
    LOOP
        PERFORM pg_advisory_xact_lock_shared(1, hashtext(c::text));
        WITH expired AS (
            SELECT a.campaign_id, a.id, a.ticket_id FROM allocations a
             WHERE a.campaign_id = c AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
             ORDER BY a.expires_at
             LIMIT p_batch
             FOR UPDATE SKIP LOCKED
        ),
        lapsed AS (
            UPDATE allocations a SET status = 'EXPIRED'
              FROM expired e
             WHERE a.campaign_id = e.campaign_id AND a.id = e.id AND a.status = 'HELD'
            RETURNING a.campaign_id, a.ticket_id, a.partner_id, a.from_allotment
        ),
        destined AS (
            SELECT l.campaign_id, l.ticket_id, l.partner_id, tessera_returned_ticket(l.campaign_id, l.partner_id, l.from_allotment) AS status
              FROM lapsed l
        )
        UPDATE tickets t
           SET status = d.status, allotted_to = CASE WHEN d.status = 'ALLOTTED' THEN d.partner_id END
          FROM destined d
         WHERE t.campaign_id = d.campaign_id AND t.id = d.ticket_id AND t.status = 'HELD';
        GET DIAGNOSTICS n = ROW_COUNT;
        swept := swept + n;
    END LOOP;

    -- Fold the quota credits into `live`. Deleting before updating, the same order as
    -- setPartnerQuota: credits, then the quota row.
    WITH folded AS (
        DELETE FROM partner_quota_credits RETURNING campaign_id, partner_id
    )
    UPDATE partner_quotas q SET live = q.live - f.n
      FROM (SELECT campaign_id, partner_id, count(*) AS n FROM folded GROUP BY campaign_id, partner_id) f
     WHERE q.campaign_id = f.campaign_id AND q.partner_id = f.partner_id;
    RETURN swept;
END
$$;
