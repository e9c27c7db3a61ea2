-- The campaign gate, exclusive side, on the node where the campaign's claims take its shared side
-- (src/db/campaignGate.ts takes it with close, update and quota changes). On one PostgreSQL that is
-- the one server. On Citus the first look (tessera_claim_one) runs on the node holding the campaign
-- and takes the shared side there: this function is delegated to that node like it
-- (src/db/distribute.ts, DELEGATED), so its lock is held there until the coordinator's transaction
-- ends. The statements that run their gate on the coordinator are covered by the coordinator's own
-- lock, which campaignGate.ts takes too.
CREATE OR REPLACE FUNCTION "tessera_lock_campaign_gate"(p_campaign_id UUID) RETURNS void
  LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM tessera_lock('campaign', p_campaign_id::text);
END
$$;
