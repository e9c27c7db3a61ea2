-- Records allocations: the one place an allocation row is written. Every way to allocate — the
-- first look (tessera_claim_one, and a group's tessera_claim_group), the claim in general
-- (tessera_claim_tickets), a waitlist offer (tessera_offer_returned) and a ballot's winners
-- (tessera_ballot_hold_winners) — calls it, in the transaction that took the tickets.
--
-- For one campaign and the tickets taken (p_tickets, already marked ALLOCATED or HELD by the
-- caller), with, for each, the request it was taken for (partner, holder, metadata, key, request
-- hash, its index within the request — NULL: the tickets are one request's, indexed 0, 1, … —,
-- whether it was drawn from the partner's allotment, the waitlist or ballot entry it answers), all
-- p_status (ACTIVE or HELD, with p_expires_at), it writes:
--   - one allocation per ticket, in p_tickets' order; sequence and allocated_at come from the row
--     trigger tessera_number_allocation as each row is inserted;
--   - the counters, once per partner (and per minute, for the timeline's ACTIVE ones), in this
--     backend's own slot so that no two sessions wait on one counter row: the campaign's allocated
--     or held, the partner's active or held, the timeline's ACTIVE allocations per minute;
--   - partner_quotas.live, where a partner has a quota here (the caller's gate locked that row);
--   - with p_events, one webhook event per allocation (ALLOCATION_CREATED, or HOLD_CREATED for a
--     hold) while some endpoint is enabled. A caller that announces its allocations otherwise (a
--     waitlist offer) passes false.
-- Rows come back in p_tickets' order, `n` numbering them from 1. Changes to allocations afterwards
-- are counted by the UPDATE trigger (tessera_count_allocations).
--
-- Every statement names the campaign, and rows are inserted one by one (INSERT … VALUES), so on
-- Citus a call made on the campaign's node runs there.
DROP FUNCTION IF EXISTS "tessera_record_allocations"(UUID, UUID, TEXT, JSONB, TEXT, TEXT, allocation_status, TIMESTAMPTZ, BIGINT[], BOOLEAN[], UUID, UUID, BOOLEAN);
DROP FUNCTION IF EXISTS "tessera_record_allocations"(UUID, UUID, TEXT, JSONB, TEXT, TEXT, allocation_status, TIMESTAMPTZ, BIGINT[], BOOLEAN[], UUID, UUID, BOOLEAN, BOOLEAN);
CREATE OR REPLACE FUNCTION "tessera_record_allocations"(
    p_campaign_id UUID,
    p_status allocation_status,
    p_expires_at TIMESTAMPTZ,
    p_tickets BIGINT[],
    p_partner_ids UUID[],
    p_holders TEXT[],
    p_metadata JSONB[],
    p_idempotency_keys TEXT[],
    p_request_hashes TEXT[],
    p_request_indexes INTEGER[],
    p_from_allotment BOOLEAN[],
    p_waitlist_entry_ids UUID[],
    p_ballot_entry_ids UUID[],
    p_events BOOLEAN
) RETURNS TABLE (n INTEGER, id UUID, ticket_id BIGINT, sequence BIGINT, allocated_at TIMESTAMPTZ, expires_at TIMESTAMPTZ)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_count INTEGER := COALESCE(cardinality(p_tickets), 0);
    v_slot INTEGER := pg_backend_pid();
    v_active BOOLEAN := p_status = 'ACTIVE';
    v_events BOOLEAN;
    v_partners UUID[] := '{}';
    v_per_partner INTEGER[] := '{}';
    v_minutes TIMESTAMPTZ[] := '{}';
    v_per_minute INTEGER[] := '{}';
    v_minute TIMESTAMPTZ;
    j INTEGER;
    i INTEGER;
BEGIN
    IF v_count = 0 THEN RETURN; END IF;
    v_events := p_events AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled);

    FOR i IN 1 .. v_count LOOP
        INSERT INTO allocations AS a (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key, request_hash,
                                      status, expires_at, request_index, from_allotment, waitlist_entry_id, ballot_entry_id)
        VALUES (p_campaign_id, p_tickets[i], p_partner_ids[i], p_holders[i], p_metadata[i], p_idempotency_keys[i], p_request_hashes[i],
                p_status, p_expires_at, COALESCE(p_request_indexes[i], i - 1), COALESCE(p_from_allotment[i], false),
                p_waitlist_entry_ids[i], p_ballot_entry_ids[i])
        RETURNING a.id, a.ticket_id, a.sequence, a.allocated_at, a.expires_at INTO id, ticket_id, sequence, allocated_at, expires_at;
        IF v_events THEN
            INSERT INTO webhook_events (type, campaign_id, partner_id, allocation_id, expires_at)
            VALUES (CASE WHEN v_active THEN 'ALLOCATION_CREATED' ELSE 'HOLD_CREATED' END, p_campaign_id, p_partner_ids[i], id, p_expires_at);
        END IF;
        -- Tallied per partner and per minute (expressions, no query): counted below, once each.
        j := array_position(v_partners, p_partner_ids[i]);
        IF j IS NULL THEN
            v_partners := v_partners || p_partner_ids[i];
            v_per_partner := v_per_partner || 1;
        ELSE
            v_per_partner[j] := v_per_partner[j] + 1;
        END IF;
        v_minute := date_trunc('minute', allocated_at, 'UTC');
        j := array_position(v_minutes, v_minute);
        IF j IS NULL THEN
            v_minutes := v_minutes || v_minute;
            v_per_minute := v_per_minute || 1;
        ELSE
            v_per_minute[j] := v_per_minute[j] + 1;
        END IF;
        n := i;
        RETURN NEXT;
    END LOOP;

    INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held)
    VALUES (p_campaign_id, v_slot, CASE WHEN v_active THEN v_count ELSE 0 END, CASE WHEN v_active THEN 0 ELSE v_count END)
    ON CONFLICT (campaign_id, slot) DO UPDATE SET allocated = c.allocated + EXCLUDED.allocated, held = c.held + EXCLUDED.held;
    FOR j IN 1 .. cardinality(v_partners) LOOP
        INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
        VALUES (p_campaign_id, v_partners[j], v_slot, CASE WHEN v_active THEN v_per_partner[j] ELSE 0 END, CASE WHEN v_active THEN 0 ELSE v_per_partner[j] END)
        ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = c.active + EXCLUDED.active, held = c.held + EXCLUDED.held;
        UPDATE partner_quotas q SET live = q.live + v_per_partner[j] WHERE q.campaign_id = p_campaign_id AND q.partner_id = v_partners[j];
    END LOOP;
    IF v_active THEN
        FOR j IN 1 .. cardinality(v_minutes) LOOP
            INSERT INTO minute_counters AS c (campaign_id, minute, slot, active) VALUES (p_campaign_id, v_minutes[j], v_slot, v_per_minute[j])
            ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = c.active + EXCLUDED.active;
        END LOOP;
    END IF;
END
$$;
