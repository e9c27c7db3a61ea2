-- The insert side of the rule tickets.campaign_id → campaigns.id (tessera_ticket_campaign_key.sql
-- keeps the other side and says why it is not a foreign key): every campaign of the tickets a
-- statement inserted exists, and stays until the transaction ends — the check and the lock (FOR KEY
-- SHARE) a foreign key makes, once per campaign instead of once per ticket. Called by
-- tessera_count_tickets, the statement trigger that already groups every insert's tickets by
-- campaign. Errors are the foreign key's own: SQLSTATE 23503, constraint tickets_campaign_id_fkey.
--
-- On Citus this runs on the node holding the tickets' shard, and campaigns is a reference table
-- with a copy (a placement) on that node: the row is read and locked there, as Citus's own foreign
-- keys to reference tables do. (Locking it through the table's name would lock every node's copy,
-- from inside a shard's statement.) A delete of the campaign changes every copy, so it waits for
-- this lock.
CREATE OR REPLACE FUNCTION "tessera_lock_ticket_campaigns"(campaign_ids UUID[]) RETURNS VOID
  LANGUAGE plpgsql
AS $$
DECLARE
    c UUID;
    placement TEXT;
    found_it BOOLEAN;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        placement := shard_name('campaigns'::regclass, (SELECT s.shardid FROM pg_dist_shard s WHERE s.logicalrelid = 'campaigns'::regclass));
        IF to_regclass(placement) IS NULL THEN placement := NULL; END IF;
    END IF;
    FOREACH c IN ARRAY campaign_ids LOOP
        IF placement IS NULL THEN
            PERFORM 1 FROM campaigns WHERE id = c FOR KEY SHARE;
            found_it := FOUND;
        ELSE
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE id = $1 FOR KEY SHARE)', placement) INTO found_it USING c;
        END IF;
        IF NOT found_it THEN
            RAISE EXCEPTION 'insert or update on table "tickets" violates foreign key constraint "tickets_campaign_id_fkey"'
                USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'tickets_campaign_id_fkey', TABLE = 'tickets',
                      DETAIL = format('Key (campaign_id)=(%s) is not present in table "campaigns".', c);
        END IF;
    END LOOP;
END
$$;
