// setPartnerQuota: sets (or, with null, removes) a partner's cap in one campaign. Under the campaign
// gate, exclusive: no claim, release or sweep is in flight while `live` is counted, and from then on
// the trigger tessera_count_live keeps it in the same transactions as the allocations it counts.
// The partner's pending credits are already reflected in the recount, so they go first (credits,
// then the quota row: the order the sweeper uses too). One INSERT … SELECT, the time given with the
// row: Citus takes neither a sub-select in VALUES nor a function in DO UPDATE SET.
import { lockCampaignGate, type Batchable } from './campaignGate';

export async function setPartnerQuota(db: Batchable, campaignId: string, partnerId: string, quota: number | null): Promise<void> {
  const write =
    quota === null
      ? db.$executeRaw`DELETE FROM partner_quotas WHERE campaign_id = ${campaignId}::uuid AND partner_id = ${partnerId}::uuid`
      : db.$executeRaw`
          INSERT INTO partner_quotas (campaign_id, partner_id, quota, live, updated_at)
          SELECT ${campaignId}::uuid, ${partnerId}::uuid, ${quota}::integer, count(*), statement_timestamp()
            FROM allocations
           WHERE campaign_id = ${campaignId}::uuid AND partner_id = ${partnerId}::uuid AND status IN ('HELD', 'ACTIVE')
          ON CONFLICT (campaign_id, partner_id)
          DO UPDATE SET quota = EXCLUDED.quota, live = EXCLUDED.live, updated_at = EXCLUDED.updated_at`;
  const credits = db.$executeRaw`
    DELETE FROM partner_quota_credits WHERE campaign_id = ${campaignId}::uuid AND partner_id = ${partnerId}::uuid`;
  await db.$transaction([...lockCampaignGate(db, campaignId), credits, write]);
}
