-- Changes to allocations counted per campaign (allocated, held), per partner (active, held) and per
-- minute they became ACTIVE (active), by a statement-level trigger reading the transition tables, in
-- the same transaction as the allocations. Once per statement: a sweep of
-- 1,000 holds updates each counter once — per-row triggers would update one counter row once per
-- allocation, and each update of a row within one transaction walks its earlier versions: quadratic.
--
-- Every row that enters a bucket counts +1 in it, every row that leaves -1 in the bucket it was in
-- — confirmations, releases, expiries, takeovers of expired holds, even a backdated allocated_at,
-- all alike. The writes themselves: tessera_apply_allocation_delta.
--
-- New allocations are counted where they are recorded (tessera_record_allocations), in the same
-- transaction: an AFTER INSERT trigger cost 0.19–0.24 ms of every claim.
--
-- `void`: under the VOID release policy, every allocation that stops being live (released, or its
-- hold ended by the sweeper — claims never take over a VOID campaign's expired holds) retires its
-- ticket, and the statement that ends it marks the ticket VOID. The policy never changes after
-- creation, so counting it here agrees with the tickets.
CREATE OR REPLACE FUNCTION "tessera_count_allocations"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
DECLARE
    deltas tessera_allocation_delta[];
    ids UUID[];
    ns BIGINT[];
BEGIN
    -- The transition tables are read by queries of their own, into arrays, and the counters are
    -- written from those: on Citus the trigger runs on the shard, where a query that names a
    -- distributed or reference table cannot also read a transition table.
    SELECT array_agg(d) INTO deltas
      FROM (SELECT (campaign_id, partner_id, status, date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC'), 1)::tessera_allocation_delta AS d
              FROM rows_in WHERE status IN ('ACTIVE', 'HELD')
            UNION ALL
            SELECT (campaign_id, partner_id, status, date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC'), -1)::tessera_allocation_delta
              FROM rows_out WHERE status IN ('ACTIVE', 'HELD')) x;
    PERFORM tessera_apply_allocation_delta(deltas);
    SELECT array_agg(x.campaign_id), array_agg(x.n) INTO ids, ns
      FROM (SELECT n.campaign_id, count(*) AS n
              FROM rows_in n
              JOIN rows_out o ON o.campaign_id = n.campaign_id AND o.id = n.id
             WHERE o.status IN ('ACTIVE', 'HELD') AND n.status IN ('RELEASED', 'EXPIRED')
             GROUP BY n.campaign_id) x;
    IF ids IS NULL THEN RETURN NULL; END IF;
    INSERT INTO campaign_counters AS c (campaign_id, slot, void)
    SELECT u.campaign_id, pg_backend_pid(), u.n
      FROM unnest(ids, ns) AS u(campaign_id, n)
      JOIN campaigns cp ON cp.id = u.campaign_id
     WHERE cp.release_policy = 'VOID'
    ON CONFLICT (campaign_id, slot) DO UPDATE SET void = c.void + EXCLUDED.void;
    RETURN NULL;
END
$$;

-- Dropped and created again in the transaction that applies this file (src/db/migrate.ts), so no
-- allocation update ever runs without it. (CREATE OR REPLACE TRIGGER would need PostgreSQL 14.)
DROP TRIGGER IF EXISTS "allocations_count_inserted" ON "allocations";
DROP TRIGGER IF EXISTS "allocations_count_changed" ON "allocations";
CREATE TRIGGER "allocations_count_changed" AFTER UPDATE ON "allocations"
    REFERENCING OLD TABLE AS rows_out NEW TABLE AS rows_in
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_allocations"();
