-- The advisory-lock classes — the first half of every advisory lock's key Tessera takes inside a
-- transaction — by name, numbered here and nowhere else (tessera_lock takes the locks):
--
--   campaign         1  a campaign's gate, keyed by its id: SHARED by every claim, hold,
--                       confirmation, release, waitlist and ballot step and sweep of the campaign;
--                       EXCLUSIVE by what changes what a claim may do (close, update, quotas, a draw,
--                       verify/repair, test resets and purges), which so waits for the claims past it
--   idempotency_key  2  a partner's idempotency key: '<partner id>:<key>'
--   holder           3  a holder of a campaign with a per-holder limit: '<campaign>:<partner>:<holder>'
--   endpoint_owner   4  the webhook endpoints of one owner (a partner, or the operators), counted
--                       against their limit
--   delivery_lease   5  the webhook dispatcher's lease (one key)
--   waitlist         6  a campaign's waitlist queue, keyed by the campaign's id
--   ballot_pass      7  a ballot's passing-on of declined wins, keyed by the campaign's id
--
-- Order: a transaction takes its locks in class order (campaign, idempotency_key, holder), then the
-- partners' quota rows (FOR UPDATE, by campaign and partner), then waitlist or ballot_pass; within a
-- class, several keys in hash order (tessera_lock_each). No two transactions can then wait on each
-- other in a cycle.
--
-- IMMUTABLE, so that a call with a constant name — every caller's — is folded into the plan once.
CREATE OR REPLACE FUNCTION "tessera_advisory_class"(p_class TEXT) RETURNS INTEGER
  LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    v_class INTEGER := CASE p_class
        WHEN 'campaign' THEN 1
        WHEN 'idempotency_key' THEN 2
        WHEN 'holder' THEN 3
        WHEN 'endpoint_owner' THEN 4
        WHEN 'delivery_lease' THEN 5
        WHEN 'waitlist' THEN 6
        WHEN 'ballot_pass' THEN 7
    END;
BEGIN
    IF v_class IS NULL THEN
        RAISE EXCEPTION 'no advisory lock class %', p_class USING ERRCODE = 'P0001';
    END IF;
    RETURN v_class;
END
$$;
