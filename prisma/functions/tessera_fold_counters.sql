-- Folds the counter slots of backends that have exited into slot 0 (called by the sweeper,
-- src/db/expireHolds.ts), so that a campaign keeps one row per backend at work. The row of a live
-- backend is never touched; a backend that reuses an exited one's pid waits, at worst, for this
-- fold to commit before writing its own row. (PL/pgSQL, checked when it runs: it names a column a
-- migration after the baseline adds.)
CREATE OR REPLACE FUNCTION "tessera_fold_counters"() RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    WITH gone AS (
        DELETE FROM campaign_counters c
         WHERE c.slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
        RETURNING c.*
    )
    INSERT INTO campaign_counters AS c (campaign_id, slot, total, allocated, held, void)
    SELECT campaign_id, 0, sum(total), sum(allocated), sum(held), sum(void) FROM gone GROUP BY campaign_id
    ON CONFLICT (campaign_id, slot)
    DO UPDATE SET total = c.total + EXCLUDED.total, allocated = c.allocated + EXCLUDED.allocated, held = c.held + EXCLUDED.held,
                  void = c.void + EXCLUDED.void;

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
END
$$;
