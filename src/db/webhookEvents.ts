// The webhook outbox (docs/WEBHOOKS.md): a statement that makes a change appends its event to
// webhook_events in the same statement, so the event exists exactly when the change committed, and
// the dispatcher (src/webhooks/dispatcher.ts) drains it into deliveries. Nothing is appended while no
// endpoint is enabled.
//
// Who appends what:
//   ALLOCATION_CREATED, HOLD_CREATED   the claim statements (claimOne.ts, claimGroup.ts,
//                                      claimTicket.ts), with ALLOCATION_EVENTS below
//   HOLD_CONFIRMED (+ ALLOCATION_CREATED), ALLOCATION_RELEASED, HOLD_EXPIRED
//                                      the AFTER UPDATE trigger on allocations
//                                      (prisma/functions/tessera_record_allocation_events.sql)
//   CAMPAIGN_OPENED, CAMPAIGN_CLOSED   openCampaign.ts, closeCampaign.ts
//   CAMPAIGN_SOLD_OUT, CAMPAIGN_LOW_STOCK
//                                      the sweeper (prisma/functions/tessera_stock_events.sql)

/** True while some endpoint may want an event: evaluated once per statement. */
export const ENDPOINTS_LISTENING = 'EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled)';

/**
 * A CTE for a claim statement, after its `allocated` CTE (which returns id, campaign_id,
 * partner_id, status and expires_at of the rows it inserted): one event per new allocation. Its cost
 * on the claim is measured in docs/WEBHOOKS.md (a bare heap: under 1% per claim in a group).
 */
export const ALLOCATION_EVENTS = `
evented AS (
  INSERT INTO webhook_events (type, campaign_id, partner_id, allocation_id, expires_at)
  SELECT CASE WHEN a.status = 'HELD' THEN 'HOLD_CREATED' ELSE 'ALLOCATION_CREATED' END,
         a.campaign_id, a.partner_id, a.id, a.expires_at
    FROM allocated a
   WHERE ${ENDPOINTS_LISTENING}
)`;
