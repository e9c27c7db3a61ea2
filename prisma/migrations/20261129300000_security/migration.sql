-- API-key management, per-partner rate limits, and the audit log of admin mutations.

-- When the partner's key was last used (written at most once a minute per key: see
-- services/partners.ts) and its own rate limit (points per second; null = the server's default).
ALTER TABLE "partners" ADD COLUMN "last_used_at" TIMESTAMPTZ(6);
ALTER TABLE "partners" ADD COLUMN "rotated_at" TIMESTAMPTZ(6);
ALTER TABLE "partners" ADD COLUMN "rate_limit" INTEGER;
ALTER TABLE "partners" ADD CONSTRAINT "partners_rate_limit_positive" CHECK ("rate_limit" IS NULL OR "rate_limit" > 0);

-- Every admin mutation: who, what (the operation and its arguments, without secrets or bulk data),
-- when, and how it ended. Append-only: nothing in Tessera updates or deletes a row.
CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "arguments" JSONB NOT NULL,
    "outcome" TEXT NOT NULL,
    "request_id" TEXT,
    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "audit_log_at_idx" ON "audit_log"("at" DESC, "id" DESC);
