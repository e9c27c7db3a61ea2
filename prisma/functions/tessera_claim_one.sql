-- The first look of a claimTicket request that goes alone: the gate, one AVAILABLE ticket, its
-- allocation, alone in its transaction. (Requests that go together take the same steps in one call
-- of tessera_claim_group.)
--
-- 1. tessera_claim_gate: the locks (the campaign's gate shared, the idempotency key, the holder, the
--    partner's quota row) and the campaign's rules, read after them. Anything but OK is the answer.
-- 2. A partner with tickets ALLOTTED to it in the campaign takes nothing here (one probe of an index
--    that is empty in a campaign without allotments): it draws on its allotment first, in the second
--    look (tessera_claim_tickets).
-- 3. One AVAILABLE ticket, FOR UPDATE SKIP LOCKED, from the random point p_start of the pick order,
--    wrapping round below it only if nothing was found above: concurrent claims never wait on each
--    other, and none walks the dead index entries earlier claims left at the front.
-- 4. The ticket marked ALLOCATED, its status re-checked in the UPDATE (under READ COMMITTED a locked
--    row is re-checked only against the WHERE of the statement that locks it). The row is found by
--    primary key and the re-check is written IS NOT DISTINCT FROM (status is never NULL) so that the
--    AVAILABLE partial index cannot serve the UPDATE: on a table never analyzed, right after a load,
--    the planner would take it on campaign_id alone and filter the whole campaign
--    (test/plan.test.ts).
-- 5. The allocation, its counters and its event: tessera_record_allocations.
--
-- Nothing found: the row comes back OK without an allocation, and the second look decides (it takes
-- over expired holds, waits for tickets in flight, and tells SOLD_OUT from ALL_HELD).
--
-- Every statement names the campaign, so on Citus the whole call runs on the node holding it.
DROP FUNCTION IF EXISTS "tessera_claim_one"(UUID, UUID, TEXT, JSONB, TEXT, TEXT, INTEGER);
DROP FUNCTION IF EXISTS "tessera_claim_one"(UUID, UUID, TEXT, JSONB, TEXT, TEXT, INTEGER, BOOLEAN, BOOLEAN);
CREATE OR REPLACE FUNCTION "tessera_claim_one"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_metadata JSONB,
    p_idempotency_key TEXT,
    p_request_hash TEXT,
    p_start INTEGER,
    p_key_everywhere BOOLEAN
) RETURNS TABLE (
    ord INTEGER, verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID, id UUID, sequence BIGINT,
    allocated_at TIMESTAMPTZ, ticket_id BIGINT, ticket_code TEXT, campaign_name TEXT, campaign_status campaign_status,
    campaign_opens_at TIMESTAMPTZ, campaign_closes_at TIMESTAMPTZ, campaign_per_holder_limit INTEGER,
    campaign_created_at TIMESTAMPTZ
)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
BEGIN
    ord := 1;
    SELECT g.verdict, g.prior_campaign_id, g.prior_allocation_id INTO verdict, prior_campaign_id, prior_allocation_id
      FROM tessera_claim_gate(p_campaign_id, p_partner_id, p_holder, p_idempotency_key, 1, 1, p_key_everywhere) g;
    IF verdict <> 'OK' THEN RETURN NEXT; RETURN; END IF;

    -- (2: a partner with allotted tickets draws on them first, in the second look)
    IF EXISTS (SELECT 1 FROM tickets t
                WHERE t.campaign_id = p_campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to = p_partner_id) THEN
        RETURN NEXT; RETURN;
    END IF;

    SELECT t.id INTO ticket_id FROM tickets t
     WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE' AND t.pick_order >= p_start
     ORDER BY t.pick_order LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF ticket_id IS NULL THEN
        SELECT t.id INTO ticket_id FROM tickets t
         WHERE t.campaign_id = p_campaign_id AND t.status = 'AVAILABLE' AND t.pick_order < p_start
         ORDER BY t.pick_order LIMIT 1 FOR UPDATE SKIP LOCKED;
    END IF;
    IF ticket_id IS NULL THEN RETURN NEXT; RETURN; END IF;

    -- (4: by primary key, re-checked, never by the AVAILABLE index)
    UPDATE tickets t SET status = 'ALLOCATED'
     WHERE t.campaign_id = p_campaign_id AND t.id = ticket_id AND t.status IS NOT DISTINCT FROM 'AVAILABLE'
    RETURNING t.code INTO ticket_code;
    IF ticket_code IS NULL THEN ticket_id := NULL; RETURN NEXT; RETURN; END IF;

    SELECT r.id, r.sequence, r.allocated_at INTO id, sequence, allocated_at
      FROM tessera_record_allocations(p_campaign_id, 'ACTIVE', NULL, ARRAY[ticket_id], ARRAY[p_partner_id], ARRAY[p_holder],
                                      ARRAY[p_metadata], ARRAY[p_idempotency_key], ARRAY[p_request_hash], NULL, NULL, NULL, NULL, true) r;

    SELECT cp.name, cp.status, cp.opens_at, cp.closes_at, cp.per_holder_limit, cp.created_at
      INTO campaign_name, campaign_status, campaign_opens_at, campaign_closes_at, campaign_per_holder_limit, campaign_created_at
      FROM campaigns cp WHERE cp.id = p_campaign_id;
    RETURN NEXT;
END
$$;
