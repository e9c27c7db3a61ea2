-- releaseAllocation (src/db/releaseAllocation.ts): a live (ACTIVE, or HELD and not expired)
-- allocation becomes RELEASED and its ticket AVAILABLE — or ALLOTTED again when it was drawn from
-- the partner's live allotment, VOID under the VOID release policy, RETURNED under WAITLIST_FIRST
-- (tessera_returned_ticket decides; offer_due then says the waitlist is to be offered it). Releasing
-- a hold of a waitlist offer declines it: its entry is LEFT (tessera_settle_waitlist_entry, a
-- trigger). `p_partner_id` restricts it to that partner's own allocations (NULL: the admin).
--
-- It takes the campaign gate shared (as everything that changes which allocations are live does),
-- then the allocation row, then the ticket row — the order every statement that touches an existing
-- allocation uses. If the campaign is sold out at that moment, the time it sold out is recorded
-- first (soldOutAt: the last moment anyone can still tell). A hold that has expired is over
-- already: it is not released.
--
-- A function rather than one statement of CTEs: the allocation is named by its id alone, so its
-- campaign is read first, and then every statement names it (on Citus: routed to its node), while
-- the gate and tessera_record_sold_out run on the coordinator. The clock is read into a variable
-- just before the write (Citus refuses a VOLATILE function in an UPDATE of a distributed table); a
-- row re-checked after a wait for its lock must still be live. Call it alone in its statement: next
-- to a query of a distributed table, Citus would push the call to a worker.
CREATE OR REPLACE FUNCTION "tessera_release_allocation"(p_allocation_id UUID, p_partner_id UUID)
  RETURNS TABLE (released allocations, offer_due BOOLEAN)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_campaign UUID;
    v_now TIMESTAMPTZ := clock_timestamp();
    v_status ticket_status;
BEGIN
    -- The look-up by id reads every shard on Citus; done over one connection per node, so that this
    -- transaction may then write the campaign (a reference table) on those connections. (A setting
    -- of its own name on plain PostgreSQL, which nothing reads.)
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    SELECT a.campaign_id INTO v_campaign FROM allocations a
     WHERE a.id = p_allocation_id
       AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > v_now))
       AND (p_partner_id IS NULL OR a.partner_id = p_partner_id);
    IF v_campaign IS NULL THEN
        RETURN;
    END IF;
    PERFORM tessera_lock('campaign', v_campaign::text, true);
    PERFORM tessera_record_sold_out(v_campaign);
    v_now := clock_timestamp();
    UPDATE allocations a
       SET status = 'RELEASED', released_at = v_now, expires_at = NULL
     WHERE a.campaign_id = v_campaign AND a.id = p_allocation_id
       AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > v_now))
       AND (p_partner_id IS NULL OR a.partner_id = p_partner_id)
    RETURNING a.* INTO released;
    IF released.id IS NULL THEN
        RETURN;
    END IF;
    v_status := tessera_returned_ticket(v_campaign, released.partner_id, released.from_allotment);
    UPDATE tickets t
       SET status = v_status, allotted_to = CASE WHEN v_status = 'ALLOTTED' THEN released.partner_id END
     WHERE t.campaign_id = v_campaign AND t.id = released.ticket_id;
    offer_due := v_status = 'RETURNED';
    RETURN NEXT;
END
$$;
