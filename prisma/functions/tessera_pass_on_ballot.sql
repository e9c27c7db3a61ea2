-- After the draw: the tickets no winner holds any more — returned by a lapsed or declined
-- hold, a release, or left over at the draw — pass on, in rank order, to the LOST entries whose
-- quantity they cover (tessera_ballot_walk, the draw's rule), skipping those they cannot cover. Such
-- an entry becomes WON, with fresh HELD allocations for ballot_confirm_seconds; a LAPSED entry is
-- never offered again. The sweeper calls tessera_pass_on_ballots every interval (src/sweeper.ts).
--
-- Locks (docs/CORRECTNESS.md §5): the campaign gate (shared), then the campaign's ballot lock
-- (advisory class 7, exclusive: one pass-on at a time per campaign, across instances), then the
-- pool's tickets (SKIP LOCKED) and the quota rows. An entry leaves LOST only here, under lock 7:
-- each is promoted at most once.
--
-- A walk that gives nothing leaves the pool it found in ballots.pass_on_pool; while the pool and the
-- caps are unchanged the next sweep skips the campaign without locking anything. (What to leave is
-- computed before the UPDATE: Citus refuses a function that reads tables in an UPDATE of a
-- distributed table.)
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_pass_on_ballot"(p_campaign_id UUID) RETURNS INTEGER
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c campaigns%ROWTYPE;
    b RECORD;
    pool JSONB;
    caps JSONB;
    total INTEGER;
    promoted INTEGER;
    wanted INTEGER;
    remembered JSONB;
BEGIN
    SELECT * INTO b FROM ballots WHERE campaign_id = p_campaign_id;
    IF NOT FOUND OR b.drawn_at IS NULL
       OR jsonb_build_object('pool', tessera_ballot_pool_counts(p_campaign_id), 'caps', tessera_ballot_caps(p_campaign_id, false))
          IS NOT DISTINCT FROM b.pass_on_pool THEN
        RETURN 0;
    END IF;

    PERFORM tessera_lock('campaign', p_campaign_id::text, true);
    PERFORM tessera_lock('ballot_pass', p_campaign_id::text);
    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF c.status <> 'OPEN' OR (c.closes_at IS NOT NULL AND clock_timestamp() >= c.closes_at) THEN
        RETURN 0;
    END IF;

    pool := tessera_ballot_pool(p_campaign_id);
    caps := tessera_ballot_caps(p_campaign_id, true);
    SELECT COALESCE(sum(v::integer), 0) INTO total FROM jsonb_each_text(pool) AS x(k, v);

    DROP TABLE IF EXISTS pg_temp.tessera_ballot_candidates;
    CREATE TEMP TABLE tessera_ballot_candidates ON COMMIT DROP AS
    SELECT e.id, e.partner_id, e.quantity, r.rank
      FROM ballot_ranks r JOIN ballot_entries e ON e.campaign_id = r.campaign_id AND e.id = r.entry_id
     WHERE r.campaign_id = p_campaign_id AND e.status = 'LOST' AND e.quantity <= total;

    PERFORM tessera_ballot_walk(pool, caps);
    UPDATE ballot_entries e SET status = 'WON'
      FROM tessera_ballot_winners w
     WHERE e.campaign_id = p_campaign_id AND e.id = w.id AND e.status = 'LOST';
    GET DIAGNOSTICS promoted = ROW_COUNT;
    SELECT count(*) INTO wanted FROM tessera_ballot_winners;
    IF promoted <> wanted THEN
        RAISE EXCEPTION 'ballot pass-on: % entries walked to a win, % still LOST', wanted, promoted USING ERRCODE = 'P0001';
    END IF;
    PERFORM tessera_ballot_hold_winners(p_campaign_id,
        clock_timestamp() + make_interval(secs => LEAST(COALESCE(c.ballot_confirm_seconds, 900), COALESCE(c.max_hold_seconds, 2147483647))));

    -- Nothing given: no LOST entry fits this pool under these caps. Remember both, to skip until one changes.
    -- (Only when the walk saw every ticket the unlocked count sees: none was skipped as locked.)
    IF promoted = 0 AND pool = tessera_ballot_pool_counts(p_campaign_id) THEN
        remembered := jsonb_build_object('pool', pool, 'caps', caps);
    END IF;
    UPDATE ballots SET pass_on_pool = remembered WHERE campaign_id = p_campaign_id;
    RETURN promoted;
END
$$;
