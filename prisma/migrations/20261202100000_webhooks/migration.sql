-- Partner webhooks (docs/WEBHOOKS.md): endpoints, the outbox of events, and one delivery per event
-- and matching endpoint.

CREATE TYPE "webhook_delivery_status" AS ENUM ('PENDING', 'DELIVERED', 'FAILED');

-- An endpoint: a partner's (partner_id) or an operator's (NULL, every event). Its secret is sealed
-- with WEBHOOK_SECRET_KEY (src/webhooks/secrets.ts): signing needs the secret itself, so it cannot be
-- hashed. Deleting one keeps the row (deleted_at) for its deliveries' history.
CREATE TABLE "webhook_endpoints" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "partner_id" UUID,
    "url" TEXT NOT NULL,
    "events" TEXT[] NOT NULL,
    "secret_sealed" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "deleted_at" TIMESTAMPTZ(6),
    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_endpoints_partner_id_fkey" FOREIGN KEY ("partner_id") REFERENCES "partners"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "webhook_endpoints_url_length" CHECK (char_length("url") BETWEEN 1 AND 2048),
    CONSTRAINT "webhook_endpoints_events" CHECK (cardinality("events") >= 1),
    CONSTRAINT "webhook_endpoints_deleted_disabled" CHECK ("deleted_at" IS NULL OR NOT "enabled")
);
CREATE INDEX "webhook_endpoints_partner_id_idx" ON "webhook_endpoints"("partner_id");

-- The outbox. The statement that makes a change appends its event here (src/db/webhookEvents.ts),
-- so an event exists exactly when its change committed; the dispatcher drains it into
-- webhook_deliveries. A bare heap on purpose — no key, no index: every claim appends to it while an
-- endpoint is enabled, and an index would cost the claim 3-5% where the heap costs under 1% in a
-- group (pgbench, docs/WEBHOOKS.md). It holds only what the dispatcher has not drained yet.
CREATE TABLE "webhook_events" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "type" TEXT NOT NULL,
    "campaign_id" UUID NOT NULL,
    "partner_id" UUID,
    "allocation_id" UUID,
    "expires_at" TIMESTAMPTZ(6),
    "data" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT clock_timestamp()
);

-- One delivery of one event to one endpoint. `body` is the JSON text frozen when the event was
-- drained, so every attempt signs and sends the same bytes with the same event id.
CREATE TABLE "webhook_deliveries" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "endpoint_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "event" TEXT NOT NULL,
    "allocation_id" UUID,
    "event_created_at" TIMESTAMPTZ(6) NOT NULL,
    "body" TEXT NOT NULL,
    "status" "webhook_delivery_status" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "lease_until" TIMESTAMPTZ(6),
    "delivered_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
-- One delivery per event and endpoint, whatever drains it.
CREATE UNIQUE INDEX "webhook_deliveries_endpoint_id_event_id_key" ON "webhook_deliveries"("endpoint_id", "event_id");
-- An endpoint's deliveries, newest first (webhookDeliveries).
CREATE INDEX "webhook_deliveries_endpoint_id_created_at_id_idx" ON "webhook_deliveries"("endpoint_id", "created_at" DESC, "id" DESC);
-- What is due, and what an allocation's next delivery to an endpoint waits for.
CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries"("next_attempt_at") WHERE "status" = 'PENDING';
CREATE INDEX "webhook_deliveries_pending_allocation_idx" ON "webhook_deliveries"("endpoint_id", "allocation_id", "event_created_at") WHERE "status" = 'PENDING';
