-- A waitlist entry follows its offer (src/db/waitlist.ts): a trigger on the offered
-- allocations' status, so that no path that ends a hold — confirmHold, releaseAllocation, the
-- sweeper, leaveWaitlist — can forget the entry. Only the end of a hold fires it (the WHEN clause is
-- evaluated before any PL/pgSQL runs: claims, and releases of ACTIVE allocations, pay nothing), and a
-- hold that is no offer returns at the first line. (The WHEN clause cannot name waitlist_entry_id:
-- this file is applied to databases whose migrations have not added it yet.)
--
--   HELD -> ACTIVE     the entry is ACCEPTED once every allocation of its offer is ACTIVE
--   HELD -> EXPIRED    EXPIRED: the offer lapsed (its other unconfirmed holds lapse at their time)
--   HELD -> RELEASED   LEFT: the holder declined (releaseAllocation) or left (leaveWaitlist)
--
-- ACCEPTED is decided under the entry row's lock, taken before the other allocations are read:
-- two confirmations of one offer in parallel take it one after the other, and the second (reading
-- afresh once the first has committed) sees both ACTIVE. Lock order (docs/CORRECTNESS.md §5): the
-- allocation, then its ticket, then the entry — after whatever the statement locked first.
-- The clock and the new status are read into variables first: Citus, where this runs on the shard,
-- refuses a VOLATILE function (or a non-IMMUTABLE one inside a CASE) in an UPDATE of a distributed table.
-- (PL/pgSQL, checked when it runs: it names a table and a column migrations after the baseline add.)
CREATE OR REPLACE FUNCTION "tessera_settle_waitlist_entry"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    v_now TIMESTAMPTZ;
    v_status TEXT; -- not of type waitlist_status: this file is applied before the migration that adds it
BEGIN
    IF NEW.waitlist_entry_id IS NULL THEN
        RETURN NULL;
    END IF;
    IF NEW.status = 'ACTIVE' THEN
        PERFORM 1 FROM waitlist_entries w
         WHERE w.campaign_id = NEW.campaign_id AND w.id = NEW.waitlist_entry_id
           FOR UPDATE;
        v_now := clock_timestamp();
        UPDATE waitlist_entries w SET status = 'ACCEPTED', ended_at = v_now
         WHERE w.campaign_id = NEW.campaign_id AND w.id = NEW.waitlist_entry_id AND w.status = 'OFFERED'
           AND NOT EXISTS (SELECT 1 FROM allocations a
                            WHERE a.campaign_id = NEW.campaign_id AND a.waitlist_entry_id = NEW.waitlist_entry_id
                              AND a.status <> 'ACTIVE');
    ELSE
        v_status := CASE WHEN NEW.status = 'EXPIRED' THEN 'EXPIRED' ELSE 'LEFT' END;
        v_now := clock_timestamp();
        UPDATE waitlist_entries w
           SET status = v_status::waitlist_status,
               ended_at = v_now
         WHERE w.campaign_id = NEW.campaign_id AND w.id = NEW.waitlist_entry_id AND w.status = 'OFFERED';
    END IF;
    RETURN NULL;
END
$$;

-- Dropped and created again in the transaction that applies this file (src/db/migrate.ts).
DROP TRIGGER IF EXISTS "allocations_settle_waitlist_entry" ON "allocations";
CREATE TRIGGER "allocations_settle_waitlist_entry" AFTER UPDATE OF "status" ON "allocations"
    FOR EACH ROW
    WHEN (OLD.status = 'HELD' AND NEW.status <> 'HELD')
    EXECUTE FUNCTION "tessera_settle_waitlist_entry"();
