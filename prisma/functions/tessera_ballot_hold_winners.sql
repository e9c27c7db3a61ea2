-- The winners' holds, for the draw and the pass-on: every entry in the temporary table
-- tessera_ballot_winners (tessera_ballot_walk) gets `quantity` HELD allocations until p_expires, its
-- from_allot first from its partner's allotment, the rest from the shared pool — tickets of the
-- temporary table tessera_ballot_pool (tessera_ballot_pool, locked by this transaction), each owner's
-- taken in pick order, the winners served in rank order. One statement for every winner: a draw of a
-- million entries writes its holds in one pass.
--
-- Counted like a claim's inserts (src/db/countAllocations.ts): held per campaign and per partner in
-- this backend's slot, and the quotas' live. HOLD_CREATED is appended for each hold while an
-- endpoint listens (src/db/webhookEvents.ts). Raises if a ticket could not be taken — the caller's
-- transaction then writes nothing.
-- (PL/pgSQL, checked when it runs.)
CREATE OR REPLACE FUNCTION "tessera_ballot_hold_winners"(p_campaign_id UUID, p_expires TIMESTAMPTZ) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    wanted INTEGER;
    taken INTEGER;
    made INTEGER;
BEGIN
    SELECT COALESCE(sum(w.quantity), 0) INTO wanted FROM tessera_ballot_winners w;
    IF wanted = 0 THEN
        RETURN 0;
    END IF;

    WITH ranked AS (
        SELECT w.id, w.partner_id, w.quantity, w.from_allot, w.rank,
               sum(w.quantity - w.from_allot) OVER (ORDER BY w.rank) - (w.quantity - w.from_allot) AS shared_before,
               sum(w.from_allot) OVER (PARTITION BY w.partner_id ORDER BY w.rank) - w.from_allot AS allot_before
          FROM tessera_ballot_winners w
    ),
    slots AS (
        SELECT r.id AS entry_id, r.partner_id, r.rank, g - 1 AS request_index, g <= r.from_allot AS from_allotment,
               CASE WHEN g <= r.from_allot THEN r.partner_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END AS owner,
               CASE WHEN g <= r.from_allot THEN r.allot_before + g ELSE r.shared_before + g - r.from_allot END AS n
          FROM ranked r CROSS JOIN LATERAL generate_series(1, r.quantity) AS g
    ),
    picked AS (
        SELECT s.*, p.id AS ticket_id FROM slots s JOIN tessera_ballot_pool p ON p.owner = s.owner AND p.n = s.n
    ),
    held AS (
        UPDATE tickets t SET status = 'HELD'
          FROM picked k
         WHERE t.campaign_id = p_campaign_id AND t.id = k.ticket_id AND t.status IN ('AVAILABLE', 'ALLOTTED')
        RETURNING t.id
    ),
    allocated AS (
        INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata, status,
                                 expires_at, request_index, from_allotment, ballot_entry_id)
        SELECT p_campaign_id, k.ticket_id, k.partner_id, e.holder, e.metadata, 'HELD',
               p_expires, k.request_index, k.from_allotment, k.entry_id
          FROM picked k JOIN ballot_entries e ON e.campaign_id = p_campaign_id AND e.id = k.entry_id
         ORDER BY k.rank, k.request_index
        RETURNING id, campaign_id, partner_id, status, expires_at
    ),
    counted AS (
        INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held)
        SELECT p_campaign_id, pg_backend_pid(), 0, count(*) FROM allocated
        ON CONFLICT (campaign_id, slot) DO UPDATE SET held = c.held + EXCLUDED.held
    ),
    counted_partners AS (
        INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
        SELECT p_campaign_id, a.partner_id, pg_backend_pid(), 0, count(*) FROM allocated a GROUP BY a.partner_id
        ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET held = c.held + EXCLUDED.held
    ),
    counted_quotas AS (
        UPDATE partner_quotas q SET live = q.live + x.n
          FROM (SELECT a.partner_id, count(*) AS n FROM allocated a GROUP BY a.partner_id) x
         WHERE q.campaign_id = p_campaign_id AND q.partner_id = x.partner_id
    ),
    evented AS (
        INSERT INTO webhook_events (type, campaign_id, partner_id, allocation_id, expires_at)
        SELECT 'HOLD_CREATED', a.campaign_id, a.partner_id, a.id, a.expires_at
          FROM allocated a
         WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled)
    )
    SELECT (SELECT count(*) FROM held), (SELECT count(*) FROM allocated) INTO taken, made;

    IF taken <> wanted OR made <> wanted THEN
        RAISE EXCEPTION 'ballot holds: % tickets wanted, % taken, % allocations made', wanted, taken, made
              USING ERRCODE = 'P0001';
    END IF;
    RETURN made;
END
$$;
