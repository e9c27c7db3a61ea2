-- Test mode (issue 31): an audit row says which mode acted — true when a partner's test key made
-- the call, or the call named a test campaign (src/access.ts).
ALTER TABLE "audit_log" ADD COLUMN "test" BOOLEAN NOT NULL DEFAULT false;
