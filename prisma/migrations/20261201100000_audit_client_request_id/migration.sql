-- The audit log's request id is the server's own; a client's x-request-id, when it sent a
-- well-formed one, is kept beside it, never in its place.
ALTER TABLE "audit_log" ADD COLUMN "client_request_id" TEXT;
