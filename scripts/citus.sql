-- Tessera on Citus: run once on the coordinator of a Citus cluster, after `npm run db:migrate`
-- (the migrations and prisma/functions/ create plain PostgreSQL tables, functions and triggers;
-- this distributes the tables). The migrator's own tables, _prisma_migrations and
-- _tessera_functions, stay local on the coordinator.
--
-- Campaign-scoped tables are distributed by campaign_id and colocated with tickets, so every
-- claim-path statement (which names exactly one campaign) runs on one shard as a router query.
-- Campaigns and partners are small and read on every claim: reference tables (a copy per node).
--
-- Verified here (test/citus.test.ts, on plain PostgreSQL): the catalog of a migrated database
-- obeys Citus's rules for these calls — every primary and unique key of a distributed table
-- includes campaign_id; every foreign key between distributed tables includes it on both sides;
-- no reference table points at a distributed one — and this script runs against stand-in
-- functions that enforce those rules. NOT verified (Citus cannot be installed on these machines):
-- a real create_distributed_table run, and the statement-level counter triggers with transition
-- tables on allocations and tickets (tessera_count_*, prisma/functions/), which Citus propagates to
-- shards only with citus.enable_unsafe_triggers; see docs/SCALING.md.

BEGIN;

SELECT create_reference_table('partners');
SELECT create_reference_table('campaigns');
SELECT create_reference_table('audit_log');
SELECT create_reference_table('operator_keys');
-- Webhooks (docs/WEBHOOKS.md): endpoints are few and read by every drain; deliveries are written
-- off the claim path (once per event and endpoint, then once per attempt), so a copy per node is
-- affordable — distributing them by endpoint_id is the step if their volume ever needs it.
SELECT create_reference_table('webhook_endpoints');
SELECT create_reference_table('webhook_deliveries');

SELECT create_distributed_table('tickets', 'campaign_id');
SELECT create_distributed_table('allocations', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('partner_quotas', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('allotments', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('waitlist_entries', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('partner_quota_credits', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('campaign_counters', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('partner_counters', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('minute_counters', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('refusal_counters', 'campaign_id', colocate_with => 'tickets');
-- The outbox: a claim appends its event on its own shard, in its own statement.
SELECT create_distributed_table('webhook_events', 'campaign_id', colocate_with => 'tickets');
-- Ballots (docs/DESIGN.md): the draw reads and writes one campaign's entries, ranks and holds, all
-- on the campaign's shard. ballotEntry(id) and withdrawBallotEntry(entryId) name an entry by id
-- alone: on Citus those two are multi-shard lookups (by the ballot_entries_id index on each shard).
SELECT create_distributed_table('ballots', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('ballot_entries', 'campaign_id', colocate_with => 'tickets');
SELECT create_distributed_table('ballot_ranks', 'campaign_id', colocate_with => 'tickets');

COMMIT;
