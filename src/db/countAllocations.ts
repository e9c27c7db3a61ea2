// The counters an INSERT of allocations moves, as CTEs a claim statement appends after its
// `allocated` CTE (which returns campaign_id, partner_id, status, allocated_at of the rows it
// inserted): the group statement (claimGroup.ts, and so tessera_claim_group) counts its rows with
// these. Everything else that inserts allocations is a function of prisma/functions/ with its own
// copy of the same counting: tessera_claim_one (claimOne.ts; tessera_claim_campaign_group calls
// it per request), tessera_claim_tickets (claimTicket.ts), tessera_offer_returned and
// tessera_ballot_hold_winners. Each counts its rows in the call that inserts them, so in the same
// transaction (docs/CORRECTNESS.md §10), and in the backend's own slot, so that no two sessions ever
// wait on one counter row (docs/PERFORMANCE.md, strategy C). Changes to existing allocations are
// counted by the UPDATE trigger (prisma/functions/tessera_count_allocations.sql).
//
// Why here and not in an AFTER INSERT trigger: a statement trigger (transition table, PL/pgSQL,
// three upserts) costs 0.19–0.24 ms of a claim's 1.1–1.4 ms in the database (EXPLAIN ANALYZE of the
// prepared claim), and fires — with an empty transition table — for every claim statement that
// touches allocations at all.
//
//   counted            stats: allocated (ACTIVE) and held per campaign
//   counted_partners   the partner report: active and held per partner
//   counted_minutes    the timeline: ACTIVE allocations per minute they became ACTIVE
//   counted_quotas     partner_quotas.live, for partners with a quota in the campaign (the gate
//                      holds the row: it locked it FOR UPDATE before the pick)
export const COUNT_ALLOCATED = `
counted AS (
  INSERT INTO campaign_counters AS c (campaign_id, slot, allocated, held)
  SELECT a.campaign_id, pg_backend_pid(), count(*) FILTER (WHERE a.status = 'ACTIVE'), count(*) FILTER (WHERE a.status = 'HELD')
    FROM allocated a GROUP BY a.campaign_id
  ON CONFLICT (campaign_id, slot) DO UPDATE SET allocated = c.allocated + EXCLUDED.allocated, held = c.held + EXCLUDED.held
),
counted_partners AS (
  INSERT INTO partner_counters AS c (campaign_id, partner_id, slot, active, held)
  SELECT a.campaign_id, a.partner_id, pg_backend_pid(), count(*) FILTER (WHERE a.status = 'ACTIVE'), count(*) FILTER (WHERE a.status = 'HELD')
    FROM allocated a GROUP BY a.campaign_id, a.partner_id
  ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = c.active + EXCLUDED.active, held = c.held + EXCLUDED.held
),
counted_minutes AS (
  INSERT INTO minute_counters AS c (campaign_id, minute, slot, active)
  SELECT a.campaign_id, date_trunc('minute', a.allocated_at, 'UTC'), pg_backend_pid(), count(*)
    FROM allocated a WHERE a.status = 'ACTIVE' GROUP BY 1, 2
  ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = c.active + EXCLUDED.active
),
counted_quotas AS (
  UPDATE partner_quotas q SET live = q.live + x.n
    FROM (SELECT a.campaign_id, a.partner_id, count(*) AS n FROM allocated a GROUP BY 1, 2) x
   WHERE q.campaign_id = x.campaign_id AND q.partner_id = x.partner_id
)`;
