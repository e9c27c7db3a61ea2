-- Adds one statement's allocation transitions (tessera_allocation_delta rows, from
-- tessera_count_allocations) to the counters: per campaign (allocated, held), per partner (active,
-- held) and per minute an allocation became ACTIVE (active). Three upserts per statement, each into
-- this backend's own slot (slot = pg_backend_pid()), so no two sessions write one counter row and
-- claims never wait for each other on a counter (docs/PERFORMANCE.md strategy C).
CREATE OR REPLACE FUNCTION "tessera_apply_allocation_delta"(deltas tessera_allocation_delta[]) RETURNS VOID
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
