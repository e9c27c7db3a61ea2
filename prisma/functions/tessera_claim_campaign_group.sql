-- tessera_claim_group for requests of one campaign, with the campaign as its own argument: the
-- form Citus can delegate to the node holding the campaign, where the whole group then runs. Row
-- `ord` i answers request i.
DROP FUNCTION IF EXISTS "tessera_claim_campaign_group"(UUID, UUID[], TEXT[], JSONB[], TEXT[], TEXT[], INTEGER);
CREATE OR REPLACE FUNCTION "tessera_claim_campaign_group"(
    p_campaign_id UUID,
    p_partner_ids UUID[],
    p_holders TEXT[],
    p_metadata JSONB[],
    p_idempotency_keys TEXT[],
    p_request_hashes TEXT[],
    p_start INTEGER,
    p_key_everywhere BOOLEAN
) RETURNS TABLE (
    ord INTEGER, verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID, id UUID, sequence BIGINT,
    allocated_at TIMESTAMPTZ, ticket_id BIGINT, ticket_code TEXT, campaign_name TEXT, campaign_status campaign_status,
    campaign_opens_at TIMESTAMPTZ, campaign_closes_at TIMESTAMPTZ, campaign_per_holder_limit INTEGER,
    campaign_created_at TIMESTAMPTZ
)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_n INTEGER := cardinality(p_partner_ids);
BEGIN
    RETURN QUERY
        SELECT * FROM tessera_claim_group(array_fill(p_campaign_id, ARRAY[v_n]), p_partner_ids, p_holders, p_metadata,
                                          p_idempotency_keys, p_request_hashes, array_fill(p_start, ARRAY[v_n]), p_key_everywhere);
END
$$;
