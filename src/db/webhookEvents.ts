// The webhook outbox: a statement that makes a change appends its event to webhook_events in the same
// transaction, so the event exists exactly when the change committed, and
// the dispatcher (src/webhooks/dispatcher.ts) drains it into deliveries. Nothing is appended while no
// endpoint is enabled.
//
// Who appends what:
//   ALLOCATION_CREATED, HOLD_CREATED   tessera_record_allocations, which records every new
//                                      allocation (prisma/functions/)
//   WAITLIST_OFFERED                   tessera_offer_returned
//   HOLD_CONFIRMED (+ ALLOCATION_CREATED), ALLOCATION_RELEASED, HOLD_EXPIRED
//                                      the AFTER UPDATE trigger on allocations
//                                      (prisma/functions/tessera_record_allocation_events.sql)
//   CAMPAIGN_OPENED, CAMPAIGN_CLOSED   openCampaign.ts, closeCampaign.ts
//   CAMPAIGN_SOLD_OUT, CAMPAIGN_LOW_STOCK
//                                      the sweeper (prisma/functions/tessera_stock_events.sql)

/** True while some endpoint may want an event: evaluated once per statement. */
export const ENDPOINTS_LISTENING = 'EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.enabled)';
