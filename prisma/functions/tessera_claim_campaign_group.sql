-- THE claim, first look, for a group of claimTicket requests of one campaign, on Citus
-- (src/db/claimOne.ts, claimCampaignGroup, calls it; services/claimBatcher.ts groups per campaign
-- there). One PostgreSQL serves a group of any campaigns with one statement of CTEs
-- (src/db/claimGroup.ts); Citus cannot route such a statement, and a group of several campaigns would
-- span nodes. A group of one campaign, delegated to the node holding it like tessera_claim_one
-- (src/db/distribute.ts, DELEGATED), shares one call, one transaction and one commit among its
-- requests — where the coordinator's and Tessera's cost per claim is (docs/SCALING.md, "Citus").
--
-- Locks first, for the whole group, in the order every claim takes them (docs/CORRECTNESS.md §5),
-- each class in key order as the group statement does: the campaign gate (shared), the idempotency
-- keys, the holders (when the campaign has a per-holder limit), the partners' quota rows. Then each
-- request in turn is the first look of one request, tessera_claim_one, which takes the same locks
-- again (re-entrant within the transaction): two groups, or a group and a single claim, cannot wait
-- for each other in a cycle. Each request sees what the earlier ones of its group did (one
-- transaction), so a holder limit or a quota reached by the group is final, as it is for a single
-- claim. Row `ord` answers the ord-th request.
CREATE OR REPLACE FUNCTION "tessera_claim_campaign_group"(
    p_campaign_id UUID,
    p_partner_ids UUID[],
    p_holders TEXT[],
    p_metadata JSONB[],
    p_idempotency_keys TEXT[],
    p_request_hashes TEXT[],
    p_start INTEGER
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
    v_lock INTEGER;
    v_i INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1, hashtext(p_campaign_id::text));
    PERFORM tessera_lock_idempotency_keys(p_partner_ids, p_idempotency_keys);
    IF EXISTS (SELECT 1 FROM campaigns c WHERE c.id = p_campaign_id AND c.per_holder_limit IS NOT NULL) THEN
        FOR v_lock IN SELECT DISTINCT hashtext(p_campaign_id::text || ':' || h.partner_id::text || ':' || h.holder)
                        FROM unnest(p_partner_ids, p_holders) AS h(partner_id, holder)
                       ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(3, v_lock);
        END LOOP;
    END IF;
    PERFORM 1 FROM partner_quotas q
      WHERE q.campaign_id = p_campaign_id AND q.partner_id = ANY(p_partner_ids)
      ORDER BY q.partner_id
        FOR UPDATE;

    -- One pick start for the group, as the group statement has per campaign: each request takes the
    -- next AVAILABLE ticket after the previous one's.
    FOR v_i IN 1 .. cardinality(p_partner_ids) LOOP
        RETURN QUERY
            SELECT v_i, o.verdict, o.prior_campaign_id, o.prior_allocation_id, o.id, o.sequence, o.allocated_at,
                   o.ticket_id, o.ticket_code, o.campaign_name, o.campaign_status, o.campaign_opens_at,
                   o.campaign_closes_at, o.campaign_per_holder_limit, o.campaign_created_at
              FROM tessera_claim_one(p_campaign_id, p_partner_ids[v_i], p_holders[v_i], p_metadata[v_i],
                                     p_idempotency_keys[v_i], p_request_hashes[v_i], p_start) o;
    END LOOP;
END
$$;
