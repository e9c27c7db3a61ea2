-- The tickets a ballot gives: the campaign's AVAILABLE tickets, shared by every entry, and
-- the tickets of each partner's live allotment, which only that partner's entries can win. Used by
-- the draw (tessera_draw_ballot) and the pass-on (tessera_pass_on_ballot).
--
-- Locks those tickets (FOR UPDATE SKIP LOCKED: a ticket another transaction is changing is not in
-- the pool this time) into the temporary table tessera_ballot_pool (id, owner, n) — owner as in
-- tessera_ballot_pool_counts, n numbering each owner's tickets in pick order, the order the winners
-- take them in (tessera_ballot_hold_winners) — and returns {"<owner>": n}.
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_ballot_pool"(p_campaign_id UUID) RETURNS JSONB
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    DROP TABLE IF EXISTS pg_temp.tessera_ballot_pool;
    CREATE TEMP TABLE tessera_ballot_pool (id BIGINT, owner UUID, n BIGINT) ON COMMIT DROP;
    INSERT INTO tessera_ballot_pool (id, owner, n)
    SELECT x.id, x.owner, row_number() OVER (PARTITION BY x.owner ORDER BY x.pick_order)
      FROM (SELECT t.id, t.pick_order,
                   CASE WHEN t.status = 'ALLOTTED' THEN t.allotted_to ELSE '00000000-0000-0000-0000-000000000000'::uuid END AS owner
              FROM tickets t
             WHERE t.campaign_id = p_campaign_id
               AND (t.status = 'AVAILABLE'
                    OR (t.status = 'ALLOTTED'
                        AND t.allotted_to IN (SELECT l.partner_id FROM allotments l
                                               WHERE l.campaign_id = p_campaign_id AND l.lapsed_at IS NULL
                                                 AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()))))
               FOR UPDATE OF t SKIP LOCKED) x;
    RETURN (SELECT COALESCE(jsonb_object_agg(g.owner::text, g.n), '{}'::jsonb)
              FROM (SELECT p.owner, count(*) AS n FROM tessera_ballot_pool p GROUP BY p.owner) g);
END
$$;
