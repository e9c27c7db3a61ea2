-- The claim gate, called once at the start of every claim: by the first look (tessera_claim_one, once
-- per request of a group too), the second look (tessera_claim_tickets), waitlist offers and
-- confirmations.
--
-- Why a function: it must take locks *before* it reads, and read with a snapshot taken *after*
-- those locks. A VOLATILE function gets a fresh snapshot for each statement it runs (READ
-- COMMITTED), which one plain SQL statement cannot do. It never touches a ticket row.
--
-- Locks, always in this order (tessera_advisory_class names the classes), the advisory ones transaction-scoped
-- (safe behind PgBouncer):
--   1. the campaign gate, SHARED. closeCampaign takes it EXCLUSIVE: the lock manager queues new
--      shared requests behind a waiting exclusive one, so a close waits only for the claims already
--      in flight and is never starved; a claim that queued behind it then
--      reads CLOSED. Shared holders never block each other: no hot row, no MultiXact.
--   2. the (partner, idempotency key) lock, when a key is given: two requests with one key run one
--      after the other, and the second finds the first's allocation (also across campaigns; on
--      Citus the coordinator takes this lock and looks in the other campaigns first:
--      tessera_prior_claim).
--   3. the (campaign, partner, holder) lock, when the campaign has a perHolderLimit and quantity > 0:
--      the count of live allocations below is then exact for parallel claims by one holder.
--   4. the partner's quota row (FOR UPDATE), when there is one for (campaign, partner) and
--      quota quantity > 0: a partner's parallel claims in that campaign are counted one after the
--      other, exactly.
-- docs/DESIGN.md lists the same order (test/designDoc.test.ts keeps the two in step).
--
-- The quota: live + quantity must stay within it, `live` net of the credits not yet folded in and
-- of the partner's holds that have expired but were not ended yet (partner_quotas, in the baseline
-- migration). A hold past its expiry counts for neither the holder limit nor the quota: it is over
-- from that instant.
--
-- With quantity 0 (confirmHold: a confirmation makes nothing newly live) only the campaign is
-- checked — no holder or quota lock, so a confirmation never waits behind the partner's claims.
-- The holder and the quota get a quantity each: a claim of n tickets asks for n of both; a
-- confirmation asks for none.
--
-- p_key_everywhere: where the key's earlier claim is looked for — in every campaign of the partner
-- (one server holds them all), or in this campaign only, where the caller has looked in the others
-- (the dialect's keyCheck: src/db/dialect.ts).
--
-- Verdicts: OK, PRIOR (prior_allocation_id is this key's allocation), CAMPAIGN_NOT_FOUND,
-- CAMPAIGN_NOT_OPEN (also: a claim on a BALLOT campaign), HOLDER_LIMIT_REACHED, PARTNER_QUOTA_REACHED.
DROP FUNCTION IF EXISTS "tessera_claim_gate"(UUID, UUID, TEXT, TEXT, INTEGER, INTEGER);
CREATE OR REPLACE FUNCTION "tessera_claim_gate"(
    p_campaign_id UUID,
    p_partner_id UUID,
    p_holder TEXT,
    p_idempotency_key TEXT,
    p_quantity INTEGER,
    p_quota_quantity INTEGER,
    p_key_everywhere BOOLEAN
) RETURNS TABLE (verdict TEXT, prior_campaign_id UUID, prior_allocation_id UUID)
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c campaigns%ROWTYPE;
    live INTEGER;
    q partner_quotas%ROWTYPE;
BEGIN
    PERFORM tessera_lock('campaign', p_campaign_id::text, true);

    IF p_idempotency_key IS NOT NULL THEN
        PERFORM tessera_lock('idempotency_key', p_partner_id::text || ':' || p_idempotency_key);
        IF p_key_everywhere THEN
            -- The key's claim in any campaign of the partner.
            SELECT 'PRIOR', a.campaign_id, a.id INTO verdict, prior_campaign_id, prior_allocation_id
              FROM allocations a
             WHERE a.partner_id = p_partner_id AND a.idempotency_key = p_idempotency_key
             ORDER BY a.request_index
             LIMIT 1;
        ELSE
            -- In this campaign only: the caller looked in the others first (on Citus the coordinator,
            -- tessera_prior_claim, in the same transaction).
            SELECT 'PRIOR', a.campaign_id, a.id INTO verdict, prior_campaign_id, prior_allocation_id
              FROM allocations a
             WHERE a.campaign_id = p_campaign_id AND a.partner_id = p_partner_id AND a.idempotency_key = p_idempotency_key
             ORDER BY a.request_index
             LIMIT 1;
        END IF;
        IF FOUND THEN RETURN NEXT; RETURN; END IF;
    END IF;

    SELECT * INTO c FROM campaigns WHERE id = p_campaign_id;
    IF NOT FOUND THEN
        verdict := 'CAMPAIGN_NOT_FOUND'; RETURN NEXT; RETURN;
    END IF;
    IF c.status <> 'OPEN'
       OR (c.opens_at IS NOT NULL AND clock_timestamp() < c.opens_at)
       OR (c.closes_at IS NOT NULL AND clock_timestamp() >= c.closes_at) THEN
        verdict := 'CAMPAIGN_NOT_OPEN'; RETURN NEXT; RETURN;
    END IF;
    -- A BALLOT campaign takes no first-come claims (its winners' holds come from the draw); a
    -- confirmation (quantity 0) of a winner's hold passes.
    IF p_quantity > 0 AND c.mode = 'BALLOT' THEN
        verdict := 'CAMPAIGN_NOT_OPEN'; RETURN NEXT; RETURN;
    END IF;

    IF p_quantity > 0 AND c.per_holder_limit IS NOT NULL THEN
        PERFORM tessera_lock('holder', p_campaign_id::text || ':' || p_partner_id::text || ':' || p_holder);
        SELECT count(*) INTO live
          FROM allocations a
         WHERE a.campaign_id = p_campaign_id AND a.partner_id = p_partner_id AND a.holder = p_holder
           AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp()));
        IF live + p_quantity > c.per_holder_limit THEN
            verdict := 'HOLDER_LIMIT_REACHED'; RETURN NEXT; RETURN;
        END IF;
    END IF;

    IF p_quota_quantity > 0 THEN
        SELECT * INTO q FROM partner_quotas WHERE campaign_id = p_campaign_id AND partner_id = p_partner_id FOR UPDATE;
        IF FOUND THEN
            live := q.live
                  - (SELECT count(*) FROM partner_quota_credits k
                      WHERE k.campaign_id = p_campaign_id AND k.partner_id = p_partner_id)
                  - (SELECT count(*) FROM allocations a
                      WHERE a.campaign_id = p_campaign_id AND a.status = 'HELD'
                        AND a.expires_at <= clock_timestamp() AND a.partner_id = p_partner_id);
            IF live + p_quota_quantity > q.quota THEN
                verdict := 'PARTNER_QUOTA_REACHED'; RETURN NEXT; RETURN;
            END IF;
        END IF;
    END IF;

    verdict := 'OK'; RETURN NEXT;
END
$$;
