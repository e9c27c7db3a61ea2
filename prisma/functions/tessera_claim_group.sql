-- The first look for claimTicket requests that go together: one call, one transaction and one commit
-- for the group, each request judged as if alone after the group's earlier ones. Argument i of every
-- array is request i; row `ord` i answers it. p_starts: where each request's pick starts (one per
-- campaign in practice, so the group's claims on a campaign take neighbouring tickets);
-- p_key_everywhere: as tessera_claim_gate's.
--
-- Locks first, for the whole group, in the one order of tessera_lock: the campaigns' gates (shared),
-- the idempotency keys, the holders of campaigns with a per-holder limit — each class in key order —
-- then the partners' quota rows, by campaign and partner. Then each request is tessera_claim_one,
-- which takes the same locks again (re-entrant within the transaction), so two groups, or a group
-- and a lone claim, never wait for each other in a cycle. Each request sees what the earlier ones
-- did, so a holder limit or a quota the group reaches is final, as for a lone claim. The group's
-- allocations are counted once at its end, per campaign, partner and minute (tessera_count_allocated).
--
-- Every statement names one campaign: a group of one campaign's requests, called on the node holding
-- it (tessera_claim_campaign_group on Citus), runs whole there.
DROP FUNCTION IF EXISTS "tessera_claim_group"(UUID[], UUID[], TEXT[], JSONB[], TEXT[], TEXT[], INTEGER[], INTEGER[], INTEGER[]);
DROP FUNCTION IF EXISTS "tessera_claim_group"(UUID[], UUID[], TEXT[], JSONB[], TEXT[], TEXT[], INTEGER[]);
CREATE OR REPLACE FUNCTION "tessera_claim_group"(
    p_campaign_ids UUID[],
    p_partner_ids UUID[],
    p_holders TEXT[],
    p_metadata JSONB[],
    p_idempotency_keys TEXT[],
    p_request_hashes TEXT[],
    p_starts INTEGER[],
    p_key_everywhere BOOLEAN
) RETURNS TABLE (
    ord INTEGER, verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID, id UUID, sequence BIGINT,
    allocated_at TIMESTAMPTZ, ticket_id BIGINT, ticket_code TEXT, campaign_name TEXT, campaign_status campaign_status,
    campaign_opens_at TIMESTAMPTZ, campaign_closes_at TIMESTAMPTZ, campaign_per_holder_limit INTEGER,
    campaign_created_at TIMESTAMPTZ
)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_campaigns UUID[] := ARRAY(SELECT DISTINCT c FROM unnest(p_campaign_ids) c ORDER BY c);
    v_campaign UUID;
    v_holders TEXT[] := '{}';
    v_i INTEGER;
    v_row RECORD;
    v_count RECORD;
    v_counted_campaigns UUID[] := '{}';
    v_counted_partners UUID[] := '{}';
    v_counted_minutes TIMESTAMPTZ[] := '{}';
BEGIN
    PERFORM tessera_lock_each('campaign', v_campaigns::text[], true);
    PERFORM tessera_lock_each('idempotency_key',
                              ARRAY(SELECT k.partner_id::text || ':' || k.idempotency_key
                                      FROM unnest(p_partner_ids, p_idempotency_keys) AS k(partner_id, idempotency_key)));
    FOREACH v_campaign IN ARRAY v_campaigns LOOP
        IF (SELECT c.per_holder_limit IS NOT NULL FROM campaigns c WHERE c.id = v_campaign) THEN
            v_holders := v_holders || ARRAY(SELECT v_campaign::text || ':' || h.partner_id::text || ':' || h.holder
                                              FROM unnest(p_campaign_ids, p_partner_ids, p_holders) AS h(campaign_id, partner_id, holder)
                                             WHERE h.campaign_id = v_campaign);
        END IF;
    END LOOP;
    PERFORM tessera_lock_each('holder', v_holders);
    FOREACH v_campaign IN ARRAY v_campaigns LOOP
        PERFORM 1 FROM partner_quotas q
          WHERE q.campaign_id = v_campaign
            AND q.partner_id = ANY(ARRAY(SELECT r.partner_id FROM unnest(p_campaign_ids, p_partner_ids) AS r(campaign_id, partner_id)
                                          WHERE r.campaign_id = v_campaign))
          ORDER BY q.partner_id
            FOR UPDATE;
    END LOOP;

    FOR v_i IN 1 .. cardinality(p_campaign_ids) LOOP
        FOR v_row IN SELECT * FROM tessera_claim_one(p_campaign_ids[v_i], p_partner_ids[v_i], p_holders[v_i], p_metadata[v_i],
                                                     p_idempotency_keys[v_i], p_request_hashes[v_i], p_starts[v_i],
                                                     p_key_everywhere, false) LOOP
            ord := v_i; verdict := v_row.verdict; prior_campaign_id := v_row.prior_campaign_id;
            prior_allocation_id := v_row.prior_allocation_id; id := v_row.id; sequence := v_row.sequence;
            allocated_at := v_row.allocated_at; ticket_id := v_row.ticket_id; ticket_code := v_row.ticket_code;
            campaign_name := v_row.campaign_name; campaign_status := v_row.campaign_status;
            campaign_opens_at := v_row.campaign_opens_at; campaign_closes_at := v_row.campaign_closes_at;
            campaign_per_holder_limit := v_row.campaign_per_holder_limit; campaign_created_at := v_row.campaign_created_at;
            IF v_row.id IS NOT NULL THEN
                v_counted_campaigns := v_counted_campaigns || p_campaign_ids[v_i];
                v_counted_partners := v_counted_partners || p_partner_ids[v_i];
                v_counted_minutes := v_counted_minutes || date_trunc('minute', v_row.allocated_at, 'UTC');
            END IF;
            RETURN NEXT;
        END LOOP;
    END LOOP;

    -- The group's allocations counted once per campaign, partner and minute.
    FOR v_count IN SELECT c.campaign_id, c.partner_id, c.minute, count(*)::integer AS n
                     FROM unnest(v_counted_campaigns, v_counted_partners, v_counted_minutes) AS c(campaign_id, partner_id, minute)
                    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LOOP
        PERFORM tessera_count_allocated(v_count.campaign_id, v_count.partner_id, 'ACTIVE', v_count.n, v_count.minute);
    END LOOP;
END
$$;
