-- How many tickets a ballot could give now, per owner, without locking anything:
-- {"<owner>": n} — the owner being the partner whose live allotment holds them, or the nil UUID
-- (00000000-…) for the shared AVAILABLE pool. The pass-on's cheap check whether anything changed since
-- it last found no entry to give to (tessera_pass_on_ballot); tessera_ballot_pool locks the same set.
-- (PL/pgSQL, checked when it runs.)
CREATE OR REPLACE FUNCTION "tessera_ballot_pool_counts"(p_campaign_id UUID) RETURNS JSONB
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN (SELECT COALESCE(jsonb_object_agg(g.owner::text, g.n), '{}'::jsonb)
              FROM (SELECT CASE WHEN t.status = 'ALLOTTED' THEN t.allotted_to ELSE '00000000-0000-0000-0000-000000000000'::uuid END AS owner,
                           count(*) AS n
                      FROM tickets t
                     WHERE t.campaign_id = p_campaign_id
                       AND (t.status = 'AVAILABLE'
                            OR (t.status = 'ALLOTTED'
                                AND t.allotted_to IN (SELECT l.partner_id FROM allotments l
                                                       WHERE l.campaign_id = p_campaign_id AND l.lapsed_at IS NULL
                                                         AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()))))
                     GROUP BY 1) g);
END
$$;
