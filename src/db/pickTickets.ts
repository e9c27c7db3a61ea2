// The pick and the take of the single claim's statement (claimTicket.ts: holds, multi-ticket claims,
// and the second look of claimTicket requests), which takes over expired holds and can wait for
// tickets in flight. The statement is
//
//   WITH <gate> , ${pickTickets(…)} [, <all-or-nothing check>] , ${takeTickets(…)} , <allocations> …
//
// pickTickets: CTEs `upper`, `lower`, `expired` and `chosen` — up to `count` AVAILABLE tickets from
// the random start `start` (wrapping round below it), then, only for what is still missing, holds
// that have expired (never under the VOID release policy: their tickets are retired, by the
// sweeper); every row FOR UPDATE SKIP LOCKED (or FOR UPDATE in the single claim's second
// look). `chosen` numbers the tickets picked (slot) so a group claim can pair them with requests.
// Why a random start and why only the partial index can serve it: claimTicket.ts.
//
// takeTickets: CTEs `lapsed` and `taken` — an expired hold being taken over is ended first (the
// unique index of live allocations per ticket must see it gone before the new allocation is
// inserted: the sub-select in taken's WHERE runs lapsed to completion first), then the chosen
// tickets are marked, each re-checked in the UPDATE (AVAILABLE, or HELD for a taken-over hold:
// under READ COMMITTED an UPDATE that waited re-checks only its own WHERE). Rows are found by
// primary key (= ANY(ARRAY…)), never by a join the planner could turn into a scan of the campaign.
import { randomInt } from 'node:crypto';
import { Prisma } from '../generated/prisma/client';

export function pickTickets(o: {
  /** `${campaignId}::uuid` */
  campaign: Prisma.Sql;
  /** The random pick_order to start from. */
  start: number;
  /** How many tickets to pick (an SQL expression). */
  count: Prisma.Sql;
  /** FOR UPDATE SKIP LOCKED, or FOR UPDATE for a claim that waits for tickets in flight. */
  lock: 'FOR UPDATE SKIP LOCKED' | 'FOR UPDATE';
  /** Nothing is locked unless this holds (the gate's verdict). */
  when: Prisma.Sql;
}): Prisma.Sql {
  const { campaign: c, count: n, when } = o;
  const lock = Prisma.raw(o.lock);
  return Prisma.sql`
    upper AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'AVAILABLE' AND t.pick_order >= ${o.start}::integer
         AND ${when}
       ORDER BY t.pick_order LIMIT ${n}
       ${lock}
    ),
    lower AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'AVAILABLE' AND t.pick_order < ${o.start}::integer
         AND ${when}
       ORDER BY t.pick_order LIMIT ${n} - (SELECT count(*) FROM upper)
       ${lock}
    ),
    expired AS MATERIALIZED (
      SELECT a.campaign_id, a.id, a.ticket_id FROM allocations a
       WHERE a.campaign_id = ${c} AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
         AND ${when} AND ${returnsToPool(c)}
       ORDER BY a.expires_at, a.id LIMIT ${n} - (SELECT count(*) FROM upper) - (SELECT count(*) FROM lower)
       FOR UPDATE SKIP LOCKED
    ),
    chosen AS MATERIALIZED (
      SELECT id, row_number() OVER () AS slot
        FROM (SELECT id FROM upper UNION ALL SELECT id FROM lower UNION ALL SELECT ticket_id FROM expired) x
    )`;
}

export function takeTickets(o: {
  campaign: Prisma.Sql;
  /** Nothing is written unless this holds (the single claim's all-or-nothing check). */
  when: Prisma.Sql;
  /** The tickets' new status: ALLOCATED for a claim, HELD for a hold. */
  status: 'ALLOCATED' | 'HELD';
}): Prisma.Sql {
  const { campaign: c, when } = o;
  return Prisma.sql`
    lapsed AS (
      UPDATE allocations a SET status = 'EXPIRED'
       WHERE ${when}
         AND a.campaign_id = ${c} AND a.id = ANY(ARRAY(SELECT id FROM expired)) AND a.status = 'HELD'
      RETURNING a.id
    ),
    taken AS (
      UPDATE tickets t
         SET status = ${Prisma.raw(`'${o.status}'`)}
       WHERE ${when}
         AND (SELECT count(*) FROM lapsed) = (SELECT count(*) FROM expired)
         AND t.campaign_id = ${c} AND t.id = ANY(ARRAY(SELECT id FROM chosen))
         AND t.status = CASE WHEN t.id = ANY(ARRAY(SELECT ticket_id FROM expired))
                             THEN 'HELD'::ticket_status ELSE 'AVAILABLE'::ticket_status END
      RETURNING t.campaign_id, t.id, t.code
    )`;
}

/**
 * Whether the campaign's released and expired tickets go back to the pool (its release policy is
 * not VOID): a held ticket can then come back, and an expired hold can be taken over. One index
 * lookup of the campaign, run once per statement; the policy never changes after creation.
 */
export const returnsToPool = (campaign: Prisma.Sql): Prisma.Sql =>
  Prisma.sql`(SELECT cp.release_policy <> 'VOID' FROM campaigns cp WHERE cp.id = ${campaign})`;

/** Upper end of pick_order (prisma/functions/tessera_random_pick_order.sql). */
const PICK_ORDER_RANGE = 2_147_483_647;

/** A random point of the pick order to start a pick from. */
export const randomPickStart = (): number => randomInt(PICK_ORDER_RANGE);
