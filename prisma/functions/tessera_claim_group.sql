-- The first look for claimTicket requests that go together: one call, one transaction and one commit
-- for the group, and the work shared — one pick, one update and one record of allocations per
-- campaign. Argument i of every array is request i; row `ord` i answers it. p_starts: where each
-- request's pick starts (the first request's is used for its campaign, so the group's claims on a
-- campaign take neighbouring tickets); p_key_everywhere: as tessera_claim_gate's.
--
-- 1. Locks first, for the whole group, in the one order (tessera_advisory_class): the campaigns'
--    gates (shared), the idempotency keys, the holders of campaigns with a per-holder limit — each
--    class in key order — then the partners' quota rows, by campaign and partner. Two groups, or a
--    group and a lone claim (whose gate takes the same locks), never wait for each other in a cycle.
-- 2. The gate for each request in turn (re-entrant locks; it reads after them). Requests of one
--    holder (or partner) count each other before any is inserted: the k-th in the group is checked
--    as a claim of k. A holder limit or quota refusal of a request with earlier ones of its holder
--    (partner) in the group may be due to those earlier ones not getting a ticket after all: it
--    comes back UNDECIDED, and the second look answers it alone. A partner with tickets ALLOTTED to
--    it in the campaign takes nothing here either (UNDECIDED): it draws on its allotment first.
-- 3. Per campaign, as many AVAILABLE tickets as requests passed, FOR UPDATE SKIP LOCKED from the
--    random start (wrapping round below it for what is missing), marked ALLOCATED with the status
--    re-checked by primary key, then recorded in one call (tessera_record_allocations). A request
--    left without a ticket comes back OK without an allocation: the second look decides it.
--
-- Every statement names one campaign, so a group of one campaign's requests, called on the node
-- holding it (tessera_claim_campaign_group on Citus), runs whole there.
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
    v_n INTEGER := cardinality(p_campaign_ids);
    v_campaigns UUID[] := ARRAY(SELECT DISTINCT c FROM unnest(p_campaign_ids) c ORDER BY c);
    v_campaign UUID;
    v_holders TEXT[] := '{}';
    v_holder_ranks INTEGER[];
    v_partner_ranks INTEGER[];
    -- per request
    v_verdicts TEXT[] := array_fill(NULL::text, ARRAY[v_n]);
    v_prior_campaigns UUID[] := array_fill(NULL::uuid, ARRAY[v_n]);
    v_prior_allocations UUID[] := array_fill(NULL::uuid, ARRAY[v_n]);
    v_ids UUID[] := array_fill(NULL::uuid, ARRAY[v_n]);
    v_sequences BIGINT[] := array_fill(NULL::bigint, ARRAY[v_n]);
    v_allocated_ats TIMESTAMPTZ[] := array_fill(NULL::timestamptz, ARRAY[v_n]);
    v_ticket_ids BIGINT[] := array_fill(NULL::bigint, ARRAY[v_n]);
    v_ticket_codes TEXT[] := array_fill(NULL::text, ARRAY[v_n]);
    v_campaign_rows campaigns[] := array_fill(NULL::campaigns, ARRAY[v_n]);
    -- per campaign
    v_wanted INTEGER[];
    v_start INTEGER;
    v_picked BIGINT[];
    v_more BIGINT[];
    v_taken BIGINT[];
    v_codes TEXT[];
    v_cp campaigns;
    v_gate RECORD;
    v_made RECORD;
    v_r_partners UUID[];
    v_r_holders TEXT[];
    v_r_metadata JSONB[];
    v_r_keys TEXT[];
    v_r_hashes TEXT[];
    v_k INTEGER;
    v_i INTEGER;
BEGIN
    -- 1. Locks.
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

    -- 2. The gates, each request counting the earlier ones of its holder and of its partner.
    SELECT array_agg(x.holder_rank ORDER BY x.o), array_agg(x.partner_rank ORDER BY x.o) INTO v_holder_ranks, v_partner_ranks
      FROM (SELECT r.o,
                   row_number() OVER (PARTITION BY r.campaign_id, r.partner_id, r.holder ORDER BY r.o)::integer AS holder_rank,
                   row_number() OVER (PARTITION BY r.campaign_id, r.partner_id ORDER BY r.o)::integer AS partner_rank
              FROM unnest(p_campaign_ids, p_partner_ids, p_holders) WITH ORDINALITY AS r(campaign_id, partner_id, holder, o)) x;
    FOR v_i IN 1 .. v_n LOOP
        SELECT g.verdict, g.prior_campaign_id, g.prior_allocation_id INTO v_gate
          FROM tessera_claim_gate(p_campaign_ids[v_i], p_partner_ids[v_i], p_holders[v_i], p_idempotency_keys[v_i],
                                  v_holder_ranks[v_i], v_partner_ranks[v_i], p_key_everywhere) g;
        v_verdicts[v_i] := v_gate.verdict;
        v_prior_campaigns[v_i] := v_gate.prior_campaign_id;
        v_prior_allocations[v_i] := v_gate.prior_allocation_id;
        IF (v_gate.verdict = 'HOLDER_LIMIT_REACHED' AND v_holder_ranks[v_i] > 1)
           OR (v_gate.verdict = 'PARTNER_QUOTA_REACHED' AND v_partner_ranks[v_i] > 1) THEN
            v_verdicts[v_i] := 'UNDECIDED';
        ELSIF v_gate.verdict = 'OK'
              AND EXISTS (SELECT 1 FROM tickets t
                           WHERE t.campaign_id = p_campaign_ids[v_i] AND t.status = 'ALLOTTED' AND t.allotted_to = p_partner_ids[v_i]) THEN
            v_verdicts[v_i] := 'UNDECIDED';
        END IF;
    END LOOP;

    -- 3. Per campaign: the pick, the update, the record.
    FOREACH v_campaign IN ARRAY v_campaigns LOOP
        v_wanted := ARRAY(SELECT r.o::integer FROM unnest(p_campaign_ids, v_verdicts) WITH ORDINALITY AS r(campaign_id, verdict, o)
                           WHERE r.campaign_id = v_campaign AND r.verdict = 'OK' ORDER BY r.o);
        CONTINUE WHEN cardinality(v_wanted) = 0;
        v_start := p_starts[v_wanted[1]];
        SELECT COALESCE(array_agg(s.id), '{}') INTO v_picked FROM (
            SELECT t.id FROM tickets t
             WHERE t.campaign_id = v_campaign AND t.status = 'AVAILABLE' AND t.pick_order >= v_start
             ORDER BY t.pick_order LIMIT cardinality(v_wanted) FOR UPDATE SKIP LOCKED) s;
        IF cardinality(v_picked) < cardinality(v_wanted) AND v_start > 0 THEN
            SELECT COALESCE(array_agg(s.id), '{}') INTO v_more FROM (
                SELECT t.id FROM tickets t
                 WHERE t.campaign_id = v_campaign AND t.status = 'AVAILABLE' AND t.pick_order < v_start
                 ORDER BY t.pick_order LIMIT cardinality(v_wanted) - cardinality(v_picked) FOR UPDATE SKIP LOCKED) s;
            v_picked := v_picked || v_more;
        END IF;
        CONTINUE WHEN cardinality(v_picked) = 0;
        -- By primary key, the status re-checked IS NOT DISTINCT FROM so that the AVAILABLE partial
        -- index cannot serve the UPDATE (tessera_claim_one says why).
        WITH marked AS (
            UPDATE tickets t SET status = 'ALLOCATED'
             WHERE t.campaign_id = v_campaign AND t.id = ANY(v_picked) AND t.status IS NOT DISTINCT FROM 'AVAILABLE'
            RETURNING t.id, t.code
        )
        SELECT array_agg(m.id ORDER BY m.id), array_agg(m.code ORDER BY m.id) INTO v_taken, v_codes FROM marked m;
        CONTINUE WHEN v_taken IS NULL;
        v_wanted := v_wanted[1:cardinality(v_taken)];
        SELECT * INTO v_cp FROM campaigns cp WHERE cp.id = v_campaign;
        v_r_partners := '{}'; v_r_holders := '{}'; v_r_metadata := '{}'; v_r_keys := '{}'; v_r_hashes := '{}';
        FOREACH v_k IN ARRAY v_wanted LOOP
            v_r_partners := v_r_partners || p_partner_ids[v_k];
            v_r_holders := v_r_holders || p_holders[v_k];
            v_r_metadata := v_r_metadata || p_metadata[v_k];
            v_r_keys := v_r_keys || p_idempotency_keys[v_k];
            v_r_hashes := v_r_hashes || p_request_hashes[v_k];
        END LOOP;
        FOR v_made IN SELECT * FROM tessera_record_allocations(v_campaign, 'ACTIVE', NULL, v_taken, v_r_partners, v_r_holders, v_r_metadata,
                                                               v_r_keys, v_r_hashes, array_fill(0, ARRAY[cardinality(v_taken)]),
                                                               NULL, NULL, NULL, true) LOOP
            v_k := v_wanted[v_made.n];
            v_ids[v_k] := v_made.id;
            v_sequences[v_k] := v_made.sequence;
            v_allocated_ats[v_k] := v_made.allocated_at;
            v_ticket_ids[v_k] := v_made.ticket_id;
            v_ticket_codes[v_k] := v_codes[v_made.n];
            v_campaign_rows[v_k] := v_cp;
        END LOOP;
    END LOOP;

    FOR v_i IN 1 .. v_n LOOP
        ord := v_i; verdict := v_verdicts[v_i]; prior_campaign_id := v_prior_campaigns[v_i];
        prior_allocation_id := v_prior_allocations[v_i]; id := v_ids[v_i]; sequence := v_sequences[v_i];
        allocated_at := v_allocated_ats[v_i]; ticket_id := v_ticket_ids[v_i]; ticket_code := v_ticket_codes[v_i];
        campaign_name := (v_campaign_rows[v_i]).name; campaign_status := (v_campaign_rows[v_i]).status;
        campaign_opens_at := (v_campaign_rows[v_i]).opens_at; campaign_closes_at := (v_campaign_rows[v_i]).closes_at;
        campaign_per_holder_limit := (v_campaign_rows[v_i]).per_holder_limit; campaign_created_at := (v_campaign_rows[v_i]).created_at;
        RETURN NEXT;
    END LOOP;
END
$$;
