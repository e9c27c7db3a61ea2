-- The sweeper's ballot pass (src/sweeper.ts): tessera_pass_on_ballot for every drawn BALLOT
-- campaign that is open; returns how many entries became WON.
-- (PL/pgSQL, checked when it runs.)
CREATE OR REPLACE FUNCTION "tessera_pass_on_ballots"() RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c UUID;
    n INTEGER := 0;
BEGIN
    FOR c IN
        SELECT b.campaign_id FROM ballots b JOIN campaigns cp ON cp.id = b.campaign_id
         WHERE b.drawn_at IS NOT NULL AND cp.status = 'OPEN'
    LOOP
        n := n + tessera_pass_on_ballot(c);
    END LOOP;
    RETURN n;
END
$$;
