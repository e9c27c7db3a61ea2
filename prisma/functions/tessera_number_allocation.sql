-- Every new allocation is numbered and stamped here, by a BEFORE INSERT row trigger, whatever
-- inserts the row — tessera_record_allocations, which every claim, waitlist offer and ballot hold
-- calls, or an operator's SQL: Allocation.sequence from its campaign's own sequence (tessera_next_sequence), and
-- allocatedAt from the clock right after it, so that the two orders agree as closely as two
-- concurrent transactions allow. The statements leave both columns out; values given are replaced.
--
-- Why a trigger and not nextval in each statement: on Citus a row trigger runs on the node that
-- holds the row's shard, so a campaign's numbers come from one sequence — that node's — whether the
-- statement was routed there whole (the first look, delegated: src/db/distribute.ts) or planned on
-- the coordinator (which would otherwise draw from a sequence of its own and repeat numbers the
-- worker had given: the unique (campaign_id, sequence) index would refuse the claim). On one
-- PostgreSQL it is the same nextval, one row trigger call later.
CREATE OR REPLACE FUNCTION "tessera_number_allocation"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    NEW.sequence := tessera_next_sequence(NEW.campaign_id);
    NEW.allocated_at := clock_timestamp();
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS "allocations_number" ON "allocations";
CREATE TRIGGER "allocations_number" BEFORE INSERT ON "allocations"
    FOR EACH ROW EXECUTE FUNCTION "tessera_number_allocation"();
