-- confirmHold (src/db/confirmHold.ts): HELD -> ACTIVE, in one write that re-checks the hold's expiry
-- against the database clock (a hold is a lease: the check and the write must be one step, or an
-- expired lease could be confirmed after its ticket went to someone else). The gate first (with
-- quantity 0: a confirmation adds no live allocation), so a campaign that is not open is refused,
-- linearizably with close; then the allocation row, then the ticket row — the order every statement
-- that touches an existing allocation uses.
--
-- A function rather than one statement of CTEs: on Citus each of its statements names the campaign
-- and is routed to the node holding it, while the gate (a function running queries of its own) runs
-- on the coordinator; in one statement Citus would push the gate's call to a worker. The clock is
-- read into a variable (Citus refuses a VOLATILE function in an UPDATE of a distributed table), just
-- before the write; a row re-checked after a wait for its lock must still be HELD, so a hold a claim
-- or the sweeper ended meanwhile is never confirmed.
--
-- Returns the gate's verdict and, when confirmed, the allocation row. Call it alone in its statement:
-- next to a query of a distributed table, Citus would push the call to a worker.
CREATE OR REPLACE FUNCTION "tessera_confirm_hold"(p_campaign_id UUID, p_allocation_id UUID, p_partner_id UUID, p_holder TEXT)
  RETURNS TABLE (verdict TEXT, confirmed allocations)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_now TIMESTAMPTZ;
BEGIN
    SELECT g.verdict INTO verdict FROM tessera_claim_gate(p_campaign_id, p_partner_id, p_holder, NULL, 0, 0, true) g;
    IF verdict <> 'OK' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    v_now := clock_timestamp();
    UPDATE allocations a
       SET status = 'ACTIVE', confirmed_at = v_now, expires_at = NULL
     WHERE a.campaign_id = p_campaign_id AND a.id = p_allocation_id
       AND a.status = 'HELD' AND a.expires_at > v_now
    RETURNING a.* INTO confirmed;
    IF confirmed.id IS NOT NULL THEN
        UPDATE tickets t SET status = 'ALLOCATED'
         WHERE t.campaign_id = p_campaign_id AND t.id = confirmed.ticket_id AND t.status = 'HELD';
    END IF;
    RETURN NEXT;
END
$$;
