-- The rule tickets.campaign_id → campaigns.id, kept per statement instead of by a foreign key (the
-- migration 20261209100000_ticket_campaign_key_per_statement says why: a foreign key checks each
-- inserted ticket with a query of its own, half a bulk load's time).
--
-- Inserts: tessera_lock_ticket_campaigns, called by the statement trigger that already groups
-- every insert's tickets by campaign. Here, the other side: deletes and id changes of a campaign
-- that has tickets, and moves of a ticket to another campaign, refused as the foreign key (ON
-- DELETE/UPDATE RESTRICT) refused them. A delete waits for an insert holding the campaign's lock,
-- then sees its tickets.
--
-- Errors are the foreign key's own: SQLSTATE 23503, constraint tickets_campaign_id_fkey.
CREATE OR REPLACE FUNCTION "tessera_ticket_campaign_key"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    shard TEXT;
    has_tickets BOOLEAN;
BEGIN
    IF TG_TABLE_NAME = 'tickets' THEN
        RAISE EXCEPTION 'a ticket does not move to another campaign'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'tickets_campaign_id_fkey', TABLE = 'tickets';
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.id = OLD.id THEN RETURN NEW; END IF;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        -- On Citus campaigns is a reference table: this runs on every node's copy of the row, and
        -- the campaign's tickets are on one node, where a query of the distributed table from here
        -- is not allowed. So each node looks in its own placement of the campaign's shard, if it
        -- holds one; the node that does refuses, and the change fails on every node (a change to a
        -- reference table commits everywhere or nowhere).
        shard := shard_name('tickets'::regclass, get_shard_id_for_distribution_column('tickets', OLD.id));
        IF to_regclass(shard) IS NULL THEN
            has_tickets := false;
        ELSE
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE campaign_id = $1)', shard) INTO has_tickets USING OLD.id;
        END IF;
    ELSE
        has_tickets := EXISTS (SELECT 1 FROM tickets WHERE campaign_id = OLD.id);
    END IF;
    IF has_tickets THEN
        RAISE EXCEPTION 'update or delete on table "campaigns" violates foreign key constraint "tickets_campaign_id_fkey" on table "tickets"'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'tickets_campaign_id_fkey', TABLE = 'campaigns',
                  DETAIL = format('Key (id)=(%s) is still referenced from table "tickets".', OLD.id);
    END IF;
    IF TG_OP = 'UPDATE' THEN RETURN NEW; END IF;
    RETURN OLD;
END
$$;

DROP TRIGGER IF EXISTS "campaigns_keep_tickets" ON "campaigns";
CREATE TRIGGER "campaigns_keep_tickets" BEFORE DELETE OR UPDATE OF "id" ON "campaigns"
    FOR EACH ROW EXECUTE FUNCTION "tessera_ticket_campaign_key"();
DROP TRIGGER IF EXISTS "tickets_keep_campaign" ON "tickets";
CREATE TRIGGER "tickets_keep_campaign" BEFORE UPDATE OF "campaign_id" ON "tickets"
    FOR EACH ROW WHEN (NEW.campaign_id IS DISTINCT FROM OLD.campaign_id) EXECUTE FUNCTION "tessera_ticket_campaign_key"();
