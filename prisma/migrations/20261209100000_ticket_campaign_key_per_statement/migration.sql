-- Tickets keep their campaign without a per-row foreign key. The key's check ran one query per
-- inserted ticket (PostgreSQL's foreign keys are row triggers): measured here, a 1,000,000-ticket
-- load took 12.3-13.3 s with it and 6.0-6.5 s without (docs/BENCHMARKS.md, "Loads at COPY speed").
-- The same rule now holds per statement (prisma/functions/tessera_lock_ticket_campaigns.sql and
-- tessera_ticket_campaign_key.sql): the counting trigger that already reads every insert's
-- campaigns checks and locks them, and a campaign with tickets cannot be deleted nor its id
-- changed. Every other table's foreign keys stay as they are: they are written a row at a time.
ALTER TABLE tickets DROP CONSTRAINT tickets_campaign_id_fkey;
