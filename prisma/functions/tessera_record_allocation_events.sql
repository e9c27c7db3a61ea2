-- Webhook events of changes to existing allocations, appended to the outbox webhook_events by a
-- statement-level trigger in the same transaction as the change, so an event exists exactly when its
-- change committed. New allocations' events are appended where they are recorded
-- (tessera_record_allocations).
--
--   HELD -> ACTIVE                 HOLD_CONFIRMED, then ALLOCATION_CREATED (a confirmed hold is an
--                                  allocation from then on)
--   HELD or ACTIVE -> RELEASED     ALLOCATION_RELEASED
--   HELD -> EXPIRED                HOLD_EXPIRED (the sweeper, or a claim taking over the ticket)
--
-- Once per statement, from the transition tables: a sweep of 1,000 holds appends 1,000 rows in one
-- insert. Nothing is appended while no endpoint is enabled.
CREATE OR REPLACE FUNCTION "tessera_record_allocation_events"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    types TEXT[];
    campaign_ids UUID[];
    partner_ids UUID[];
    allocation_ids UUID[];
    expiries TIMESTAMPTZ[];
    steps INTEGER[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled) THEN
        RETURN NULL;
    END IF;
    -- The transition tables are read by a query of their own, into arrays, and the events written
    -- from those: on Citus the trigger runs on the shard, where a query that names a distributed
    -- table cannot also read a transition table (docs/SCALING.md, "Citus").
    SELECT array_agg(e.type ORDER BY n.id, e.step), array_agg(n.campaign_id ORDER BY n.id, e.step), array_agg(n.partner_id ORDER BY n.id, e.step),
           array_agg(n.id ORDER BY n.id, e.step), array_agg(n.expires_at ORDER BY n.id, e.step), array_agg(e.step ORDER BY n.id, e.step)
      INTO types, campaign_ids, partner_ids, allocation_ids, expiries, steps
      FROM rows_in n
      JOIN rows_out o ON o.campaign_id = n.campaign_id AND o.id = n.id
     CROSS JOIN LATERAL (VALUES
             (1, CASE WHEN o.status = 'HELD' AND n.status = 'ACTIVE' THEN 'HOLD_CONFIRMED'
                      WHEN o.status IN ('HELD', 'ACTIVE') AND n.status = 'RELEASED' THEN 'ALLOCATION_RELEASED'
                      WHEN o.status = 'HELD' AND n.status = 'EXPIRED' THEN 'HOLD_EXPIRED' END),
             (2, CASE WHEN o.status = 'HELD' AND n.status = 'ACTIVE' THEN 'ALLOCATION_CREATED' END)
           ) AS e(step, type)
     WHERE e.type IS NOT NULL;
    IF types IS NULL THEN RETURN NULL; END IF;
    -- created_at orders an allocation's events for delivery: the confirmation's two events, written
    -- by one insert, could read the same microsecond, so the second is set one microsecond later.
    INSERT INTO webhook_events (type, campaign_id, partner_id, allocation_id, expires_at, created_at)
    SELECT u.type, u.campaign_id, u.partner_id, u.allocation_id, u.expires_at, clock_timestamp() + (u.step - 1) * interval '1 microsecond'
      FROM unnest(types, campaign_ids, partner_ids, allocation_ids, expiries, steps)
           WITH ORDINALITY AS u(type, campaign_id, partner_id, allocation_id, expires_at, step, ord)
     ORDER BY u.ord;
    RETURN NULL;
END
$$;

-- Dropped and created again in the transaction that applies this file (src/db/migrate.ts).
DROP TRIGGER IF EXISTS "allocations_record_events" ON "allocations";
CREATE TRIGGER "allocations_record_events" AFTER UPDATE ON "allocations"
    REFERENCING OLD TABLE AS rows_out NEW TABLE AS rows_in
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_record_allocation_events"();
