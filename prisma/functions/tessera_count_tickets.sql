-- Tickets per campaign (`total`, for campaign.stats), counted by statement-level triggers reading
-- the transition tables, in the same transaction as the tickets (docs/CORRECTNESS.md §10): once per
-- statement, so a load of 10,000 tickets updates its counter row once. Each backend writes its own
-- slot (slot = pg_backend_pid(); the counter tables in the baseline migration say why).
--
-- Ticket statuses follow live allocations one to one (ALLOCATED = an ACTIVE allocation, HELD = a
-- HELD one), so `allocated` and `held` are counted from the allocations' transitions instead
-- (tessera_count_allocations) — one trigger per statement for every counter a claim moves.
CREATE OR REPLACE FUNCTION "tessera_count_tickets"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    ids UUID[];
    ns BIGINT[];
BEGIN
    -- The transition table is read by a query of its own, into arrays, and the counters are written
    -- from those: on Citus the trigger runs on the shard, where a query that names a distributed
    -- table cannot also read a transition table (docs/SCALING.md, "Citus").
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(x.campaign_id), array_agg(x.n) INTO ids, ns
          FROM (SELECT campaign_id, count(*) AS n FROM rows_in GROUP BY campaign_id) x;
    ELSE
        SELECT array_agg(x.campaign_id), array_agg(-x.n) INTO ids, ns
          FROM (SELECT campaign_id, count(*) AS n FROM rows_out GROUP BY campaign_id) x;
    END IF;
    IF ids IS NULL THEN RETURN NULL; END IF;
    -- Every inserted ticket's campaign exists and stays until this transaction ends: a foreign
    -- key's check and lock, once per campaign (tessera_lock_ticket_campaigns).
    IF TG_OP = 'INSERT' THEN PERFORM tessera_lock_ticket_campaigns(ids); END IF;
    INSERT INTO campaign_counters AS c (campaign_id, slot, total)
    SELECT u.campaign_id, pg_backend_pid(), u.n FROM unnest(ids, ns) AS u(campaign_id, n)
    ON CONFLICT (campaign_id, slot) DO UPDATE SET total = c.total + EXCLUDED.total;
    RETURN NULL;
END
$$;

-- Dropped and created again in the transaction that applies this file (src/db/migrate.ts), so no
-- ticket write ever runs without them. (CREATE OR REPLACE TRIGGER would need PostgreSQL 14.)
DROP TRIGGER IF EXISTS "tickets_count_inserted" ON "tickets";
CREATE TRIGGER "tickets_count_inserted" AFTER INSERT ON "tickets"
    REFERENCING NEW TABLE AS rows_in
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_tickets"();
-- Tessera never deletes tickets (foreign keys restrict it); if an operator does, the count follows.
DROP TRIGGER IF EXISTS "tickets_count_deleted" ON "tickets";
CREATE TRIGGER "tickets_count_deleted" AFTER DELETE ON "tickets"
    REFERENCING OLD TABLE AS rows_out
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_tickets"();
