-- The winners' holds, for the draw and the pass-on: every entry in the temporary table
-- tessera_ballot_winners (tessera_ballot_walk) gets `quantity` HELD allocations until p_expires, its
-- from_allot first from its partner's allotment, the rest from the shared pool — tickets of the
-- temporary table tessera_ballot_pool (tessera_ballot_pool, locked by this transaction), each owner's
-- taken in pick order, the winners served in rank order. The tickets are picked and marked HELD in
-- one pass, then recorded in one call (tessera_record_allocations: rows in rank order, counters,
-- HOLD_CREATED events). Raises if a ticket could not be taken — the caller's
-- transaction then writes nothing.
CREATE OR REPLACE FUNCTION "tessera_ballot_hold_winners"(p_campaign_id UUID, p_expires TIMESTAMPTZ) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    wanted INTEGER;
    taken INTEGER;
    made INTEGER := 0;
    v_entries UUID[];
    v_partners UUID[];
    v_tickets BIGINT[];
    v_from BOOLEAN[];
    v_indexes INTEGER[];
    v_holders TEXT[];
    v_metadata JSONB[];
BEGIN
    SELECT COALESCE(sum(w.quantity), 0) INTO wanted FROM tessera_ballot_winners w;
    IF wanted = 0 THEN
        RETURN 0;
    END IF;

    -- Each winner's slots (allotted ones first), paired with the pool's tickets of their owner in
    -- pick order; in rank order, each winner's in request order.
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
    )
    SELECT array_agg(s.entry_id ORDER BY s.rank, s.request_index), array_agg(s.partner_id ORDER BY s.rank, s.request_index),
           array_agg(p.id ORDER BY s.rank, s.request_index), array_agg(s.from_allotment ORDER BY s.rank, s.request_index),
           array_agg(s.request_index ORDER BY s.rank, s.request_index),
           array_agg(e.holder ORDER BY s.rank, s.request_index), array_agg(e.metadata ORDER BY s.rank, s.request_index)
      INTO v_entries, v_partners, v_tickets, v_from, v_indexes, v_holders, v_metadata
      FROM slots s JOIN tessera_ballot_pool p ON p.owner = s.owner AND p.n = s.n
      JOIN ballot_entries e ON e.campaign_id = p_campaign_id AND e.id = s.entry_id;

    UPDATE tickets t SET status = 'HELD'
     WHERE t.campaign_id = p_campaign_id AND t.id = ANY(v_tickets) AND t.status IN ('AVAILABLE', 'ALLOTTED');
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF taken <> wanted THEN
        RAISE EXCEPTION 'ballot holds: % tickets wanted, % taken', wanted, taken USING ERRCODE = 'P0001';
    END IF;

    SELECT count(*) INTO made
      FROM tessera_record_allocations(p_campaign_id, 'HELD', p_expires, v_tickets, v_partners, v_holders, v_metadata, NULL, NULL,
                                      v_indexes, v_from, NULL, v_entries, true);

    IF made <> wanted THEN
        RAISE EXCEPTION 'ballot holds: % tickets wanted, % allocations made', wanted, made USING ERRCODE = 'P0001';
    END IF;
    RETURN made;
END
$$;
