// The webhook_endpoints and webhook_deliveries rows as raw SQL returns them, and their mapping to
// the models the API answers with.
import type { DeliveryStatus, WebhookEvent } from '../generated/graphql';
import type { WebhookDeliveryModel, WebhookEndpointModel } from '../models';

/** What an endpoint statement returns (never its sealed secret). */
export const ENDPOINT_COLUMNS = 'id, partner_id, url, events, enabled, test, created_at';

export interface EndpointRow {
  id: string;
  partner_id: string | null;
  url: string;
  events: WebhookEvent[];
  enabled: boolean;
  test: boolean;
  created_at: Date;
}

export const toEndpoint = (r: EndpointRow): WebhookEndpointModel => ({
  id: r.id,
  partnerId: r.partner_id,
  url: r.url,
  events: r.events,
  enabled: r.enabled,
  test: r.test,
  createdAt: r.created_at,
});

/** What a delivery statement returns, from `webhook_deliveries d` (never its body). */
export const DELIVERY_COLUMNS = 'd.id, d.event_id, d.event, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at, d.delivered_at, d.created_at';

export interface DeliveryRow {
  id: string;
  event_id: string;
  event: WebhookEvent;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date;
  delivered_at: Date | null;
  created_at: Date;
}

export const toDelivery = (r: DeliveryRow): WebhookDeliveryModel => ({
  id: r.id,
  eventId: r.event_id,
  event: r.event,
  status: r.status,
  attempts: r.attempts,
  lastStatusCode: r.last_status_code,
  lastError: r.last_error,
  // The column always holds a time; it means something only while the delivery waits.
  nextAttemptAt: r.status === 'PENDING' ? r.next_attempt_at : null,
  deliveredAt: r.delivered_at,
  createdAt: r.created_at,
});
