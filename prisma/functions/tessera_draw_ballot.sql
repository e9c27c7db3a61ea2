-- drawBallot (src/db/ballots.ts): draws a BALLOT campaign once, atomically.
--
-- The caller passes the seed it unsealed (src/ballot/seed.ts); it must hash to the commitment
-- published at the opening. Then, in this one transaction:
--   1. the ENTERED entries are ranked by sha256("<seed>:<entry id>") ascending — bytea order, which
--      is the order of the lowercase hex the contract names;
--   2. tessera_ballot_walk picks the winners from the pool (tessera_ballot_pool) under the quotas
--      (tessera_ballot_caps);
--   3. the ranking is written (ballot_ranks), and every drawn entry gets its rank and WON or LOST
--      (HOT updates: see the migration); the winners get HELD allocations for
--      ballot_confirm_seconds (never past max_hold_seconds), tessera_ballot_hold_winners;
--   4. the ballot row is completed: the seed (public from now on), entriesDigest (sha256 of the drawn
--      ids sorted by code point, joined by "\n"), entryCount, the tickets drawn for, winners, and each
--      capped partner's limits; BALLOT_DRAWN is appended for the webhooks.
--
-- Locks (docs/CORRECTNESS.md §5): the campaign gate EXCLUSIVE first — it waits for the entries,
-- withdrawals and confirmations in flight, and every later one reads the drawn ballot — then the
-- ballot row. A second drawBallot, concurrent or later, waits for the gate and answers DRAWN: one
-- draw. The gate is held for the draw's length (seconds for a million entries, docs/BENCHMARKS.md):
-- nothing else happens to a BALLOT campaign before it is drawn.
--
-- Verdicts: OK, DRAWN (drawn before: nothing changes), CAMPAIGN_NOT_FOUND, NOT_A_BALLOT,
-- CAMPAIGN_NOT_OPEN (DRAFT — no seed yet — or CLOSED), SEED_MISMATCH (the seed does not hash to the
-- commitment: nothing is drawn).
-- (Citus: drawn_at is read into a variable before the UPDATE, and the entries' status is a constant
-- in each branch — Citus refuses VOLATILE functions, and non-IMMUTABLE casts inside a CASE, in an
-- UPDATE of a distributed table.)
-- (PL/pgSQL, checked when it runs: it names tables and columns migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_draw_ballot"(p_campaign_id UUID, p_seed TEXT) RETURNS TEXT
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c campaigns%ROWTYPE;
    b RECORD;
    pool JSONB;
    caps JSONB;
    n_entries INTEGER;
    n_tickets INTEGER;
    n_winners INTEGER;
    digest TEXT;
    limits JSONB;
    v_now TIMESTAMPTZ;
BEGIN
    PERFORM tessera_lock('campaign', p_campaign_id::text);
    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND THEN
        RETURN 'CAMPAIGN_NOT_FOUND';
    END IF;
    IF c.mode <> 'BALLOT' THEN
        RETURN 'NOT_A_BALLOT';
    END IF;
    SELECT * INTO b FROM ballots WHERE campaign_id = p_campaign_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'CAMPAIGN_NOT_OPEN';
    END IF;
    IF b.drawn_at IS NOT NULL THEN
        RETURN 'DRAWN';
    END IF;
    IF c.status <> 'OPEN' THEN
        RETURN 'CAMPAIGN_NOT_OPEN';
    END IF;
    IF encode(sha256(convert_to(p_seed, 'UTF8')), 'hex') <> b.seed_commitment THEN
        RETURN 'SEED_MISMATCH';
    END IF;

    DROP TABLE IF EXISTS pg_temp.tessera_ballot_candidates;
    CREATE TEMP TABLE tessera_ballot_candidates ON COMMIT DROP AS
    SELECT e.id, e.partner_id, e.quantity,
           (row_number() OVER (ORDER BY sha256(convert_to(p_seed || ':' || e.id::text, 'UTF8'))))::integer AS rank
      FROM ballot_entries e
     WHERE e.campaign_id = p_campaign_id AND e.status = 'ENTERED';
    GET DIAGNOSTICS n_entries = ROW_COUNT;

    pool := tessera_ballot_pool(p_campaign_id);
    caps := tessera_ballot_caps(p_campaign_id, true);
    SELECT COALESCE(sum(v::integer), 0) INTO n_tickets FROM jsonb_each_text(pool) AS x(k, v);
    PERFORM tessera_ballot_walk(pool, caps);
    SELECT count(*) INTO n_winners FROM tessera_ballot_winners;

    INSERT INTO ballot_ranks (campaign_id, rank, entry_id)
    SELECT p_campaign_id, r.rank, r.id FROM tessera_ballot_candidates r ORDER BY r.rank;
    -- A HOT update of each entry (no index names these columns; the table leaves room in each page).
    UPDATE ballot_entries e
       SET rank = r.rank,
           won_in_draw = (w.id IS NOT NULL),
           status = CASE WHEN w.id IS NOT NULL THEN 'WON'::ballot_entry_status ELSE 'LOST'::ballot_entry_status END
      FROM tessera_ballot_candidates r LEFT JOIN tessera_ballot_winners w ON w.id = r.id
     WHERE e.campaign_id = p_campaign_id AND e.id = r.id;

    PERFORM tessera_ballot_hold_winners(p_campaign_id,
        clock_timestamp() + make_interval(secs => LEAST(COALESCE(c.ballot_confirm_seconds, 900), COALESCE(c.max_hold_seconds, 2147483647))));

    SELECT encode(sha256(convert_to(COALESCE(string_agg(r.id::text, E'\n' ORDER BY r.id::text COLLATE "C"), ''), 'UTF8')), 'hex')
      INTO digest FROM tessera_ballot_candidates r;

    -- The figures a partner's wins were capped by, for the verifier: its allotment and what its quota left.
    SELECT COALESCE(jsonb_object_agg(p.partner_id,
               jsonb_strip_nulls(jsonb_build_object('allotted', (pool ->> p.partner_id)::integer, 'quota', (caps ->> p.partner_id)::integer))), '{}'::jsonb)
      INTO limits
      FROM (SELECT k AS partner_id FROM jsonb_object_keys(pool - '00000000-0000-0000-0000-000000000000') AS k
            UNION SELECT k FROM jsonb_object_keys(caps) AS k) p;

    v_now := clock_timestamp();
    UPDATE ballots
       SET seed = p_seed, entries_digest = digest, entry_count = n_entries, tickets = n_tickets,
           winners = n_winners, partner_limits = limits, drawn_at = v_now
     WHERE campaign_id = p_campaign_id;

    INSERT INTO webhook_events (type, campaign_id, data)
    SELECT 'BALLOT_DRAWN', p_campaign_id,
           tessera_campaign_event_data(p_campaign_id, 'OPEN')
             || jsonb_build_object('ballot', jsonb_build_object('seed', p_seed, 'entriesDigest', digest,
                                                                'entryCount', n_entries, 'winners', n_winners))
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.enabled);
    RETURN 'OK';
END
$$;
