-- extendHold (src/db/extendHold.ts): a HELD allocation's expires_at moved to
-- max(expires_at, now + ttl), never past allocated_at + the campaign's max_hold_seconds. Like a
-- confirmation, the check that the hold has not expired and the write are one step against the
-- database clock: the row is locked first and checked under its lock, so a hold that lapsed — or
-- that a claim or the sweeper took over — is never extended. Returns the extended row, or nothing
-- (the caller then reads why not).
--
-- A function, with the new expiry computed from the locked row's values: Citus refuses VOLATILE
-- functions in an UPDATE of a distributed table, and STABLE ones (timestamptz + interval is one)
-- applied to its columns. Call it alone in its statement: next to a query of a distributed table,
-- Citus would push the call to a worker.
CREATE OR REPLACE FUNCTION "tessera_extend_hold"(p_campaign_id UUID, p_allocation_id UUID, p_ttl_seconds INTEGER)
  RETURNS SETOF allocations
  LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    longest INTERVAL;
    held allocations%ROWTYPE;
    v_now TIMESTAMPTZ;
    v_expires TIMESTAMPTZ;
BEGIN
    SELECT make_interval(secs => cp.max_hold_seconds) INTO longest FROM campaigns cp WHERE cp.id = p_campaign_id;
    SELECT * INTO held FROM allocations a
     WHERE a.campaign_id = p_campaign_id AND a.id = p_allocation_id AND a.status = 'HELD'
       FOR UPDATE;
    v_now := clock_timestamp();
    IF held.id IS NULL OR held.expires_at <= v_now THEN
        RETURN;
    END IF;
    v_expires := GREATEST(held.expires_at, v_now + make_interval(secs => p_ttl_seconds));
    IF longest IS NOT NULL AND v_expires > held.allocated_at + longest THEN
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE allocations a SET expires_at = v_expires
     WHERE a.campaign_id = p_campaign_id AND a.id = p_allocation_id AND a.status = 'HELD'
    RETURNING a.*;
END
$$;
