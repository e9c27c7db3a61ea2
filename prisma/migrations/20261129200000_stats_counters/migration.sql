-- campaign.stats in O(1) of the campaign's size: ticket counts kept as counters, in the same
-- transaction as the ticket changes they count (CORRECTNESS.md 10), spread over 64 slot rows per
-- campaign so that no single row is updated by every claim (PERFORMANCE.md strategy C: one counter
-- row serializes all claims). A backend always writes the slot pg_backend_pid() % 64, so the
-- connections of one pool rarely share a slot. Reading the stats sums 64 rows.

CREATE TABLE "campaign_counters" (
    "campaign_id" UUID NOT NULL,
    "slot" SMALLINT NOT NULL,
    "total" BIGINT NOT NULL DEFAULT 0,
    "allocated" BIGINT NOT NULL DEFAULT 0,
    "held" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "campaign_counters_pkey" PRIMARY KEY ("campaign_id", "slot"),
    CONSTRAINT "campaign_counters_slot_range" CHECK ("slot" BETWEEN 0 AND 63)
);
ALTER TABLE "campaign_counters" ADD CONSTRAINT "campaign_counters_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Every campaign gets its 64 slots when it is created, so the ticket triggers only ever UPDATE.
CREATE FUNCTION "tessera_campaign_slots"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO campaign_counters (campaign_id, slot) SELECT NEW.id, s FROM generate_series(0, 63) s;
    RETURN NULL;
END
$$;
CREATE TRIGGER "campaigns_counter_slots" AFTER INSERT ON "campaigns"
    FOR EACH ROW EXECUTE FUNCTION "tessera_campaign_slots"();

-- Loading: once per statement (a million-row generateTickets fires it once), from the transition table.
CREATE FUNCTION "tessera_count_loaded"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE campaign_counters c
       SET total = c.total + n.total,
           allocated = c.allocated + n.allocated,
           held = c.held + n.held
      FROM (SELECT campaign_id, count(*) AS total,
                   count(*) FILTER (WHERE status = 'ALLOCATED') AS allocated,
                   count(*) FILTER (WHERE status = 'HELD') AS held
              FROM loaded GROUP BY campaign_id) n
     WHERE c.campaign_id = n.campaign_id AND c.slot = pg_backend_pid() % 64;
    RETURN NULL;
END
$$;
CREATE TRIGGER "tickets_count_loaded" AFTER INSERT ON "tickets"
    REFERENCING NEW TABLE AS loaded
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_loaded"();

-- Tickets are never deleted by Tessera (foreign keys restrict it); if an operator does, the
-- counters follow.
CREATE FUNCTION "tessera_count_deleted"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE campaign_counters c
       SET total = c.total - n.total,
           allocated = c.allocated - n.allocated,
           held = c.held - n.held
      FROM (SELECT campaign_id, count(*) AS total,
                   count(*) FILTER (WHERE status = 'ALLOCATED') AS allocated,
                   count(*) FILTER (WHERE status = 'HELD') AS held
              FROM deleted GROUP BY campaign_id) n
     WHERE c.campaign_id = n.campaign_id AND c.slot = pg_backend_pid() % 64;
    RETURN NULL;
END
$$;
CREATE TRIGGER "tickets_count_deleted" AFTER DELETE ON "tickets"
    REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_deleted"();

-- Status changes (claims, holds, confirmations, releases, expiries): once per statement, from the
-- transition tables. Not per row: a statement changing many tickets (a sweep, a bulk fill) would
-- then update the same counter row once per ticket, and each update within one transaction walks
-- the chain of that row's earlier versions — quadratic. (A column list, UPDATE OF status, cannot be
-- combined with transition tables; the join below ignores rows whose status did not change.)
CREATE FUNCTION "tessera_count_status"() RETURNS trigger
  LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE campaign_counters c
       SET allocated = c.allocated + d.allocated,
           held = c.held + d.held
      FROM (SELECT n.campaign_id,
                   sum((n.status = 'ALLOCATED')::integer - (o.status = 'ALLOCATED')::integer) AS allocated,
                   sum((n.status = 'HELD')::integer - (o.status = 'HELD')::integer) AS held
              FROM changed_new n JOIN changed_old o ON o.campaign_id = n.campaign_id AND o.id = n.id
             WHERE n.status IS DISTINCT FROM o.status
             GROUP BY n.campaign_id) d
     WHERE c.campaign_id = d.campaign_id AND c.slot = pg_backend_pid() % 64
       AND (d.allocated <> 0 OR d.held <> 0);
    RETURN NULL;
END
$$;
CREATE TRIGGER "tickets_count_status" AFTER UPDATE ON "tickets"
    REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed_new
    FOR EACH STATEMENT EXECUTE FUNCTION "tessera_count_status"();

-- Campaigns that exist already: their slots, and their current counts in slot 0.
INSERT INTO campaign_counters (campaign_id, slot) SELECT c.id, s FROM campaigns c, generate_series(0, 63) s;
UPDATE campaign_counters cc
   SET total = n.total, allocated = n.allocated, held = n.held
  FROM (SELECT campaign_id, count(*) AS total,
               count(*) FILTER (WHERE status = 'ALLOCATED') AS allocated,
               count(*) FILTER (WHERE status = 'HELD') AS held
          FROM tickets GROUP BY campaign_id) n
 WHERE cc.campaign_id = n.campaign_id AND cc.slot = 0;

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
