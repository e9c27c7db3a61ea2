-- Counts p_n new allocations of one partner in one campaign, all p_status (ACTIVE or HELD), in this
-- backend's own slot so that no two sessions wait on one counter row: the campaign's allocated or
-- held, the partner's active or held and, for ACTIVE ones, the timeline's count for p_minute, the
-- minute they became ACTIVE. (A quota's live is counted by tessera_record_allocations itself, at
-- once: the gate of the group's next request reads it.) tessera_record_allocations calls it for what it records;
-- a group (tessera_claim_group) calls it once per campaign, partner and minute for all its
-- requests, since a counter row updated once per request in one transaction grows a chain of
-- versions each update walks.
CREATE OR REPLACE FUNCTION "tessera_count_allocated"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_status allocation_status,
    p_n INTEGER,
    p_minute TIMESTAMPTZ
) RETURNS VOID
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_slot INTEGER := pg_backend_pid();
    v_active INTEGER := CASE WHEN p_status = 'ACTIVE' THEN p_n ELSE 0 END;
    v_held INTEGER := CASE WHEN p_status = 'HELD' THEN p_n ELSE 0 END;
BEGIN
    IF p_n <= 0 THEN RETURN; END IF;
    INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held)
    VALUES (p_campaign_id, v_slot, v_active, v_held)
    ON CONFLICT (campaign_id, slot) DO UPDATE SET allocated = c.allocated + EXCLUDED.allocated, held = c.held + EXCLUDED.held;
    INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
    VALUES (p_campaign_id, p_partner_id, v_slot, v_active, v_held)
    ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = c.active + EXCLUDED.active, held = c.held + EXCLUDED.held;
    IF v_active > 0 THEN
        INSERT INTO minute_counters AS c (campaign_id, minute, slot, active) VALUES (p_campaign_id, p_minute, v_slot, v_active)
        ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = c.active + EXCLUDED.active;
    END IF;
END
$$;
