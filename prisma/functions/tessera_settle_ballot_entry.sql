-- A winning ballot entry follows its holds: a trigger on the won allocations' status, so
-- that no path that ends a hold — the sweeper, releaseAllocation — can forget the entry. A hold that
-- lapses or is released makes its WON entry LAPSED (never offered again); its ticket goes where the
-- release policy sends it, and the next pass-on (tessera_pass_on_ballot) gives it on. A confirmed
-- hold (HELD -> ACTIVE) leaves the entry WON. Only the end of a hold fires it (the WHEN clause is
-- evaluated before any PL/pgSQL runs), and a hold that no ballot won returns at the first line.
-- (The WHEN clause cannot name ballot_entry_id: this file is applied to databases whose migrations
-- have not added it yet.)
-- The clock is read into a variable first: Citus, where this runs on the shard, refuses a VOLATILE
-- function in an UPDATE of a distributed table.
-- (PL/pgSQL, checked when it runs: it names a table and a column migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_settle_ballot_entry"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    v_now TIMESTAMPTZ;
BEGIN
    IF NEW.ballot_entry_id IS NULL OR NEW.status = 'ACTIVE' THEN
        RETURN NULL;
    END IF;
    v_now := clock_timestamp();
    UPDATE ballot_entries e SET status = 'LAPSED', ended_at = v_now
     WHERE e.campaign_id = NEW.campaign_id AND e.id = NEW.ballot_entry_id AND e.status = 'WON';
    RETURN NULL;
END
$$;

-- Dropped and created again in the transaction that applies this file (src/db/migrate.ts).
DROP TRIGGER IF EXISTS "allocations_settle_ballot_entry" ON "allocations";
CREATE TRIGGER "allocations_settle_ballot_entry" AFTER UPDATE OF "status" ON "allocations"
    FOR EACH ROW
    WHEN (OLD.status = 'HELD' AND NEW.status <> 'HELD')
    EXECUTE FUNCTION "tessera_settle_ballot_entry"();
