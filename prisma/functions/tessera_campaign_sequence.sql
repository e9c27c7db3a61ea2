-- Every campaign has its own allocation sequence (tessera_allocation_sequence says why and how it is
-- named): created in the transaction that inserts the campaign, whatever inserts it (createCampaign,
-- or SQL), and dropped with it (Tessera never deletes a campaign; an operator's DELETE leaves no
-- sequence behind). The sequences are per-campaign objects, like rows: prisma/schema.sql leaves them
-- out (src/db/schemaDump.ts).
CREATE OR REPLACE FUNCTION "tessera_campaign_sequence"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        EXECUTE format('CREATE SEQUENCE %I AS bigint START WITH 1 CACHE 1', tessera_allocation_sequence(NEW.id));
    ELSE
        EXECUTE format('DROP SEQUENCE IF EXISTS %I', tessera_allocation_sequence(OLD.id));
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "campaigns_allocation_sequence" ON "campaigns";
CREATE TRIGGER "campaigns_allocation_sequence" AFTER INSERT OR DELETE ON "campaigns"
    FOR EACH ROW EXECUTE FUNCTION "tessera_campaign_sequence"();

-- Campaigns made before allocations were numbered per campaign (or while this trigger was missing)
-- get theirs here, continuing after the highest sequence they have, so each campaign's numbers stay
-- strictly increasing across the change. Idempotent: only missing sequences are created.
-- (One campaign per query: on Citus a correlated sub-select over a reference table is refused.)
DO $$
DECLARE
    c RECORD;
    next_sequence BIGINT;
BEGIN
    FOR c IN
        SELECT cp.id FROM campaigns cp WHERE to_regclass(tessera_allocation_sequence(cp.id)) IS NULL
    LOOP
        SELECT COALESCE(max(a.sequence), 0) + 1 INTO next_sequence FROM allocations a WHERE a.campaign_id = c.id;
        EXECUTE format('CREATE SEQUENCE %I AS bigint START WITH %s CACHE 1', tessera_allocation_sequence(c.id), next_sequence);
    END LOOP;
END
$$;
