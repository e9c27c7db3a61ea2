-- The ballot's rule (the contract's "Ballot drops" block), in one place for the draw and
-- the pass-on: walking the temporary table tessera_ballot_candidates (id, partner_id, quantity, rank)
-- in rank order, an entry WINS when the tickets not yet won cover its quantity — its partner's
-- allotment first, then the shared pool — and its partner's quota (p_caps, tessera_ballot_caps) does
-- too; otherwise it is passed over and the walk goes on, so a later, smaller entry can still win.
-- With no quotas or allotments in the campaign, that is exactly the contract's rule; with them, the
-- draw publishes the figures it used (Ballot.partnerLimits) so that the rule can still be checked.
--
-- p_pool is {"<owner>": n} (tessera_ballot_pool; the nil UUID owns the shared pool). The winners go
-- into the temporary table tessera_ballot_winners (id, partner_id, quantity, from_allot, rank);
-- returns the pool left over. Stops as soon as nothing is left to give.
-- (PL/pgSQL, checked when it runs.)
CREATE OR REPLACE FUNCTION "tessera_ballot_walk"(p_pool JSONB, p_caps JSONB) RETURNS JSONB
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    nil CONSTANT TEXT := '00000000-0000-0000-0000-000000000000';
    shared INTEGER := COALESCE((p_pool ->> nil)::integer, 0);
    allotted JSONB := COALESCE(p_pool, '{}'::jsonb) - nil;
    allotted_left INTEGER;
    caps JSONB := COALESCE(p_caps, '{}'::jsonb);
    e RECORD;
    mine INTEGER;
    cap INTEGER;
    from_allot INTEGER;
BEGIN
    SELECT COALESCE(sum(v::integer), 0) INTO allotted_left FROM jsonb_each_text(allotted) AS x(k, v);
    DROP TABLE IF EXISTS pg_temp.tessera_ballot_winners;
    CREATE TEMP TABLE tessera_ballot_winners (id UUID, partner_id UUID, quantity INTEGER, from_allot INTEGER, rank INTEGER) ON COMMIT DROP;

    FOR e IN SELECT c.id, c.partner_id, c.quantity, c.rank FROM tessera_ballot_candidates c ORDER BY c.rank LOOP
        EXIT WHEN shared = 0 AND allotted_left = 0;
        mine := COALESCE((allotted ->> e.partner_id::text)::integer, 0);
        CONTINUE WHEN shared + mine < e.quantity;
        cap := (caps ->> e.partner_id::text)::integer;
        CONTINUE WHEN cap IS NOT NULL AND cap < e.quantity;

        from_allot := LEAST(mine, e.quantity);
        IF from_allot > 0 THEN
            allotted := jsonb_set(allotted, ARRAY[e.partner_id::text], to_jsonb(mine - from_allot));
            allotted_left := allotted_left - from_allot;
        END IF;
        shared := shared - (e.quantity - from_allot);
        IF cap IS NOT NULL THEN
            caps := jsonb_set(caps, ARRAY[e.partner_id::text], to_jsonb(cap - e.quantity));
        END IF;
        INSERT INTO tessera_ballot_winners (id, partner_id, quantity, from_allot, rank)
        VALUES (e.id, e.partner_id, e.quantity, from_allot, e.rank);
    END LOOP;
    RETURN jsonb_set(allotted, ARRAY[nil], to_jsonb(shared));
END
$$;
