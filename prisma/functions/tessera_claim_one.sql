-- THE claim, first look, for a claimTicket request that arrives alone (src/db/claimOne.ts calls it,
-- alone in its statement, in a transaction of its own): the group statement (src/db/claimGroup.ts)
-- cut down to one request — the same gate, the same pick, the same counting — without the group's
-- unnesting, lock ordering and pairing, which are most of its cost when there is one request to
-- serve. One request takes its locks in the gate's own order (campaign gate, key, holder, quota
-- row), the order the group statement takes them in too.
--
-- AVAILABLE tickets only, FOR UPDATE SKIP LOCKED from a random point of the pick order (p_start),
-- wrapping round below it only if nothing was found above. A partner with tickets ALLOTTED to it in
-- the campaign takes nothing here (one probe of an index that is empty in a campaign without
-- allotments): it draws on its allotment first, in the second look. Nothing found means the row
-- comes back with verdict OK and no allocation: the second look (src/db/claimTicket.ts) takes over
-- expired holds, waits for tickets in flight, and decides between SOLD_OUT and ALL_HELD.
--
-- Why one statement after another and not one statement of CTEs: every statement here names the
-- campaign (p_campaign_id), so on Citus each is planned for the one shard that holds it, and the
-- whole function runs on that shard's node — delegated there by the coordinator
-- (src/db/distribute.ts, DELEGATED; test/citus/ reads EXPLAIN: one task). A statement of CTEs whose
-- INSERTs read other CTEs is cut by Citus into a dozen steps with intermediate results even on one
-- node (delegated there, 13.6 ms a call on the worker; this function, 3.8 ms a claim through the
-- coordinator: pgbench, one client). On one PostgreSQL each statement is planned once per session
-- and kept, as a statement of CTEs would be, and costs less (docs/BENCHMARKS.md, "Before and after:
-- the claims as functions of one statement per step").
--
-- What it counts is what COUNT_ALLOCATED and ALLOCATION_EVENTS (src/db/countAllocations.ts,
-- src/db/webhookEvents.ts) count for the statements of many rows, here for one ACTIVE allocation:
-- keep the two in step.
CREATE OR REPLACE FUNCTION "tessera_claim_one"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_metadata JSONB,
    p_idempotency_key TEXT,
    p_request_hash TEXT,
    p_start INTEGER
) RETURNS TABLE (
    ord INTEGER, verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID, id UUID, sequence BIGINT,
    allocated_at TIMESTAMPTZ, ticket_id BIGINT, ticket_code TEXT, campaign_name TEXT, campaign_status campaign_status,
    campaign_opens_at TIMESTAMPTZ, campaign_closes_at TIMESTAMPTZ, campaign_per_holder_limit INTEGER,
    campaign_created_at TIMESTAMPTZ
)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_slot INTEGER := pg_backend_pid();
BEGIN
    ord := 1;
    SELECT g.verdict, g.prior_campaign_id, g.prior_allocation_id INTO verdict, prior_campaign_id, prior_allocation_id
      FROM tessera_claim_gate(p_campaign_id, p_partner_id, p_holder, p_idempotency_key, 1, 1) g;
    IF verdict <> 'OK' THEN RETURN NEXT; RETURN; END IF;

    -- A partner with tickets set aside by an allotment draws on them first: the second look does that.
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

    -- The row is locked, and was AVAILABLE in its newest version when it was locked; the UPDATE
    -- re-checks it all the same (docs/CORRECTNESS.md §1), and takes nothing if it no longer is.
    -- It finds the row by primary key, and writes the re-check IS NOT DISTINCT FROM (the same test:
    -- status is never NULL) so that the AVAILABLE partial index cannot serve it: with `=` that index
    -- qualifies too, and on a table never analyzed — right after a load — the planner took it on
    -- campaign_id alone and filtered the campaign's every ticket for the id (60,000 tickets: 30-40
    -- ms a claim instead of 0.3; test/plan.test.ts checks it).
    UPDATE tickets t SET status = 'ALLOCATED'
     WHERE t.campaign_id = p_campaign_id AND t.id = ticket_id AND t.status IS NOT DISTINCT FROM 'AVAILABLE'
    RETURNING t.code INTO ticket_code;
    IF ticket_code IS NULL THEN ticket_id := NULL; RETURN NEXT; RETURN; END IF;

    -- (sequence and allocated_at: the row trigger tessera_number_allocation gives them)
    INSERT INTO allocations AS a (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key,
                                  request_hash, status)
    VALUES (p_campaign_id, ticket_id, p_partner_id, p_holder, p_metadata, p_idempotency_key,
            p_request_hash, 'ACTIVE')
    RETURNING a.id, a.sequence, a.allocated_at INTO id, sequence, allocated_at;

    -- The counters, each in this backend's own slot (docs/PERFORMANCE.md, strategy C).
    INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held) VALUES (p_campaign_id, v_slot, 1, 0)
    ON CONFLICT (campaign_id, slot) DO UPDATE SET allocated = c.allocated + 1;
    INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held) VALUES (p_campaign_id, p_partner_id, v_slot, 1, 0)
    ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = c.active + 1;
    INSERT INTO minute_counters AS c (campaign_id, minute, slot, active)
    VALUES (p_campaign_id, date_trunc('minute', allocated_at, 'UTC'), v_slot, 1)
    ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = c.active + 1;
    -- (the gate locked the quota row, if the partner has one here, before the pick)
    UPDATE partner_quotas q SET live = q.live + 1 WHERE q.campaign_id = p_campaign_id AND q.partner_id = p_partner_id;

    IF EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled) THEN
        INSERT INTO webhook_events (type, campaign_id, partner_id, allocation_id, expires_at)
        VALUES ('ALLOCATION_CREATED', p_campaign_id, p_partner_id, id, NULL);
    END IF;

    SELECT cp.name, cp.status, cp.opens_at, cp.closes_at, cp.per_holder_limit, cp.created_at
      INTO campaign_name, campaign_status, campaign_opens_at, campaign_closes_at, campaign_per_holder_limit, campaign_created_at
      FROM campaigns cp WHERE cp.id = p_campaign_id;
    RETURN NEXT;
END
$$;
