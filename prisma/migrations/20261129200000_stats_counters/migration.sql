-- Stats and reports in O(1) of the campaign's size: counts kept as counters, in the same
-- transactions as the rows they count (CORRECTNESS.md 10), by statement-level triggers reading the
-- transition tables (once per statement: a group claim of 32, or a sweep of 1,000 holds, updates
-- each counter once — per-row triggers would update one counter row once per ticket, and each
-- update of a row within one transaction walks its earlier versions: quadratic).
--
-- No counter row is shared by two sessions at once: every backend writes the rows of its own slot,
-- slot = pg_backend_pid(), created on first use. So claims never wait for each other on a counter
-- and cannot deadlock on one (PERFORMANCE.md strategy C: one counter row serializes all claims).
-- Reading sums the slots of a campaign — one row per backend that wrote since the last fold; the
-- sweeper folds the rows of backends that have exited into slot 0 (tessera_fold_counters).

CREATE TABLE "campaign_counters" (
    "campaign_id" UUID NOT NULL,
    "slot" INTEGER NOT NULL,
    "total" BIGINT NOT NULL DEFAULT 0,
    "allocated" BIGINT NOT NULL DEFAULT 0,
    "held" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "campaign_counters_pkey" PRIMARY KEY ("campaign_id", "slot")
);
CREATE TABLE "partner_counters" (
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID NOT NULL,
    "slot" INTEGER NOT NULL,
    "active" BIGINT NOT NULL DEFAULT 0,
    "held" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "partner_counters_pkey" PRIMARY KEY ("campaign_id", "partner_id", "slot")
);
CREATE TABLE "minute_counters" (
    "campaign_id" UUID NOT NULL,
    "minute" TIMESTAMPTZ(6) NOT NULL,
    "slot" INTEGER NOT NULL,
    "active" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "minute_counters_pkey" PRIMARY KEY ("campaign_id", "minute", "slot")
);

-- Tickets: how many a campaign has (loads). Ticket statuses follow live allocations one to one
-- (ALLOCATED = an ACTIVE allocation, HELD = a HELD one), so allocated and held are counted from
-- the allocations' transitions below — one trigger per statement for every counter a claim moves.
CREATE FUNCTION "tessera_count_tickets"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO campaign_counters AS c (campaign_id, slot, total)
        SELECT campaign_id, pg_backend_pid(), count(*) FROM rows_in GROUP BY campaign_id
        ON CONFLICT (campaign_id, slot) DO UPDATE SET total = c.total + EXCLUDED.total;
    ELSE
        INSERT INTO campaign_counters AS c (campaign_id, slot, total)
        SELECT campaign_id, pg_backend_pid(), -count(*) FROM rows_out GROUP BY campaign_id
        ON CONFLICT (campaign_id, slot) DO UPDATE SET total = c.total + EXCLUDED.total;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER "tickets_count_inserted" AFTER INSERT ON "tickets"
    REFERENCING NEW TABLE AS rows_in
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_tickets"();
-- Tessera never deletes tickets (foreign keys restrict it); if an operator does, the count follows.
CREATE TRIGGER "tickets_count_deleted" AFTER DELETE ON "tickets"
    REFERENCING OLD TABLE AS rows_out
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_tickets"();

-- Allocations: per campaign (allocated, held), per partner (active, held) and per minute it became
-- ACTIVE (active). Every row that enters counts +1 in its buckets, every row that leaves -1 in
-- the buckets it was in — status changes, confirmations, releases, expiries, even a backdated
-- allocated_at, all alike.
CREATE TYPE "tessera_allocation_delta" AS (campaign_id UUID, partner_id UUID, status allocation_status, minute TIMESTAMPTZ, d INTEGER);

CREATE FUNCTION "tessera_apply_allocation_delta"(deltas tessera_allocation_delta[]) RETURNS VOID
  LANGUAGE plpgsql
AS $$
BEGIN
    IF deltas IS NULL THEN RETURN; END IF;
    INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held)
    SELECT campaign_id, pg_backend_pid(), COALESCE(sum(d) FILTER (WHERE status = 'ACTIVE'), 0), COALESCE(sum(d) FILTER (WHERE status = 'HELD'), 0)
      FROM unnest(deltas) GROUP BY campaign_id
    ON CONFLICT (campaign_id, slot) DO UPDATE SET allocated = c.allocated + EXCLUDED.allocated, held = c.held + EXCLUDED.held;

    INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
    SELECT campaign_id, partner_id, pg_backend_pid(),
           COALESCE(sum(d) FILTER (WHERE status = 'ACTIVE'), 0), COALESCE(sum(d) FILTER (WHERE status = 'HELD'), 0)
      FROM unnest(deltas) GROUP BY campaign_id, partner_id
    ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = c.active + EXCLUDED.active, held = c.held + EXCLUDED.held;

    INSERT INTO minute_counters AS c (campaign_id, minute, slot, active)
    SELECT campaign_id, minute, pg_backend_pid(), sum(d)
      FROM unnest(deltas) WHERE status = 'ACTIVE'
     GROUP BY campaign_id, minute HAVING sum(d) <> 0
    ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = c.active + EXCLUDED.active;
END
$$;

CREATE FUNCTION "tessera_count_allocations"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM tessera_apply_allocation_delta(array_agg((campaign_id, partner_id, status,
                    date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC'), 1)::tessera_allocation_delta))
           FROM rows_in WHERE status IN ('ACTIVE', 'HELD');
    ELSE
        PERFORM tessera_apply_allocation_delta(array_agg(d))
           FROM (SELECT (campaign_id, partner_id, status, date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC'), 1)::tessera_allocation_delta AS d
                   FROM rows_in WHERE status IN ('ACTIVE', 'HELD')
                 UNION ALL
                 SELECT (campaign_id, partner_id, status, date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC'), -1)::tessera_allocation_delta
                   FROM rows_out WHERE status IN ('ACTIVE', 'HELD')) x;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER "allocations_count_inserted" AFTER INSERT ON "allocations"
    REFERENCING NEW TABLE AS rows_in
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_allocations"();
CREATE TRIGGER "allocations_count_changed" AFTER UPDATE ON "allocations"
    REFERENCING OLD TABLE AS rows_out NEW TABLE AS rows_in
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_allocations"();

-- Folds the slots of backends that have exited into slot 0, so that a campaign keeps one row per
-- backend at work. The row of a live backend is never touched; a backend that reuses an exited
-- one's pid waits, at worst, for this fold to commit before writing its own row.
CREATE FUNCTION "tessera_fold_counters"() RETURNS VOID
  LANGUAGE sql VOLATILE
AS $$
    WITH gone AS (
        DELETE FROM campaign_counters c
         WHERE c.slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
        RETURNING c.*
    )
    INSERT INTO campaign_counters AS c (campaign_id, slot, total, allocated, held)
    SELECT campaign_id, 0, sum(total), sum(allocated), sum(held) FROM gone GROUP BY campaign_id
    ON CONFLICT (campaign_id, slot)
    DO UPDATE SET total = c.total + EXCLUDED.total, allocated = c.allocated + EXCLUDED.allocated, held = c.held + EXCLUDED.held;

    WITH gone AS (
        DELETE FROM partner_counters c
         WHERE c.slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
        RETURNING c.*
    )
    INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
    SELECT campaign_id, partner_id, 0, sum(active), sum(held) FROM gone GROUP BY campaign_id, partner_id
    ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = c.active + EXCLUDED.active, held = c.held + EXCLUDED.held;

    WITH gone AS (
        DELETE FROM minute_counters c
         WHERE c.slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
        RETURNING c.*
    )
    INSERT INTO minute_counters AS c (campaign_id, minute, slot, active)
    SELECT campaign_id, minute, 0, sum(active) FROM gone GROUP BY campaign_id, minute
    ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = c.active + EXCLUDED.active;
$$;

-- soldOutAt: when the pool first had nothing available and nothing held. Every statement that can
-- end a sell-out — a release, loading more tickets — calls this first, in its transaction: if the
-- campaign is sold out at that moment (from the counters: O(1)), the time it sold out — when its
-- last ticket became ACTIVE — is recorded before it stops being true. While a campaign stays sold
-- out, reads compute the same value (db/campaignStats.ts).
CREATE FUNCTION "tessera_record_sold_out"(p_campaign_id UUID) RETURNS VOID
  LANGUAGE sql VOLATILE
AS $$
    UPDATE campaigns cp
       SET sold_out_at = (SELECT max(COALESCE(a.confirmed_at, a.allocated_at)) FROM allocations a
                           WHERE a.campaign_id = cp.id AND a.status = 'ACTIVE')
     WHERE cp.id = p_campaign_id AND cp.sold_out_at IS NULL
       AND (SELECT sum(total) > 0 AND sum(total) = sum(allocated) FROM campaign_counters WHERE campaign_id = p_campaign_id);
$$;

-- What exists already, in slot 0.
INSERT INTO campaign_counters (campaign_id, slot, total, allocated, held)
SELECT c.id, 0,
       (SELECT count(*) FROM tickets t WHERE t.campaign_id = c.id),
       (SELECT count(*) FROM allocations a WHERE a.campaign_id = c.id AND a.status = 'ACTIVE'),
       (SELECT count(*) FROM allocations a WHERE a.campaign_id = c.id AND a.status = 'HELD')
  FROM campaigns c;
INSERT INTO partner_counters (campaign_id, partner_id, slot, active, held)
SELECT campaign_id, partner_id, 0, count(*) FILTER (WHERE status = 'ACTIVE'), count(*) FILTER (WHERE status = 'HELD')
  FROM allocations WHERE status IN ('ACTIVE', 'HELD') GROUP BY 1, 2;
INSERT INTO minute_counters (campaign_id, minute, slot, active)
SELECT campaign_id, date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC'), 0, count(*)
  FROM allocations WHERE status = 'ACTIVE' GROUP BY 1, 2;
