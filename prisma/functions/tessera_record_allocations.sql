-- Records allocations: the one place an allocation row is written. Every way to allocate — the
-- first look (tessera_claim_one, and so the groups), the claim in general (tessera_claim_tickets), a
-- waitlist offer (tessera_offer_returned) and a ballot's winners (tessera_ballot_hold_winners) —
-- calls it, in the transaction that took the tickets.
--
-- For one request (one partner, holder, metadata, key) and the tickets it took (p_tickets, already
-- marked ALLOCATED or HELD by the caller), in the order given, it writes:
--   - one allocation per ticket, p_status (ACTIVE or HELD, with p_expires_at), request_index 0, 1, …
--     in p_tickets' order; sequence and allocated_at come from the row trigger
--     tessera_number_allocation as each row is inserted;
--   - partner_quotas.live, where the partner has a quota here (the caller's gate locked that row);
--   - unless p_count is false, their counters (tessera_count_allocated): a caller that records
--     many requests' allocations in one transaction (tessera_claim_group) counts them itself, once
--     per campaign, partner and minute;
--   - with p_events, one webhook event per allocation (ALLOCATION_CREATED, or HOLD_CREATED for a
--     hold) while some endpoint is enabled. A caller that announces its allocations otherwise (a
--     waitlist offer) passes false.
-- Changes to allocations afterwards are counted by the UPDATE trigger (tessera_count_allocations).
--
-- Every statement names the campaign, so on Citus a call made on the campaign's node runs there.
DROP FUNCTION IF EXISTS "tessera_record_allocations"(UUID, UUID, TEXT, JSONB, TEXT, TEXT, allocation_status, TIMESTAMPTZ, BIGINT[], BOOLEAN[], UUID, UUID, BOOLEAN);
CREATE OR REPLACE FUNCTION "tessera_record_allocations"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_metadata JSONB,
    p_idempotency_key TEXT,
    p_request_hash TEXT,
    p_status allocation_status,
    p_expires_at TIMESTAMPTZ,
    p_tickets BIGINT[],
    p_from_allotment BOOLEAN[],
    p_waitlist_entry_id UUID,
    p_ballot_entry_id UUID,
    p_events BOOLEAN,
    p_count BOOLEAN DEFAULT true
) RETURNS TABLE (id UUID, ticket_id BIGINT, request_index INTEGER, sequence BIGINT, allocated_at TIMESTAMPTZ, expires_at TIMESTAMPTZ)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_n INTEGER := COALESCE(cardinality(p_tickets), 0);
    v_events BOOLEAN;
    v_minute TIMESTAMPTZ;
    v_in_minute INTEGER := 0;
    i INTEGER;
BEGIN
    IF v_n = 0 THEN RETURN; END IF;
    v_events := p_events AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled);

    FOR i IN 1 .. v_n LOOP
        INSERT INTO allocations AS a (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key, request_hash,
                                      status, expires_at, request_index, from_allotment, waitlist_entry_id, ballot_entry_id)
        VALUES (p_campaign_id, p_tickets[i], p_partner_id, p_holder, p_metadata, p_idempotency_key, p_request_hash,
                p_status, p_expires_at, i - 1, COALESCE(p_from_allotment[i], false), p_waitlist_entry_id, p_ballot_entry_id)
        RETURNING a.id, a.ticket_id, a.request_index, a.sequence, a.allocated_at, a.expires_at
             INTO id, ticket_id, request_index, sequence, allocated_at, expires_at;
        IF v_events THEN
            INSERT INTO webhook_events (type, campaign_id, partner_id, allocation_id, expires_at)
            VALUES (CASE WHEN p_status = 'HELD' THEN 'HOLD_CREATED' ELSE 'ALLOCATION_CREATED' END, p_campaign_id, p_partner_id, id, p_expires_at);
        END IF;
        -- Counted per minute the allocations became ACTIVE (the timeline's buckets): one call a minute.
        IF v_minute IS DISTINCT FROM date_trunc('minute', allocated_at, 'UTC') THEN
            IF p_count AND v_in_minute > 0 THEN
                PERFORM tessera_count_allocated(p_campaign_id, p_partner_id, p_status, v_in_minute, v_minute);
            END IF;
            v_minute := date_trunc('minute', allocated_at, 'UTC');
            v_in_minute := 0;
        END IF;
        v_in_minute := v_in_minute + 1;
        RETURN NEXT;
    END LOOP;
    IF p_count THEN
        PERFORM tessera_count_allocated(p_campaign_id, p_partner_id, p_status, v_in_minute, v_minute);
    END IF;
    -- The quota's live at once, whoever counts the rest: a later gate in the transaction reads it (the
    -- caller's gate locked the row before the pick).
    UPDATE partner_quotas q SET live = q.live + v_n WHERE q.campaign_id = p_campaign_id AND q.partner_id = p_partner_id;
END
$$;
