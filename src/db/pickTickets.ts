// The pick and the take of the single claim's statement (claimTicket.ts: holds, multi-ticket claims,
// and the second look of claimTicket requests), which takes over expired holds and can wait for
// tickets in flight. The statement is
//
//   WITH <gate> , ${pickTickets(…)} [, <all-or-nothing check>] , ${takeTickets(…)} , <allocations> …
//
// pickTickets: CTEs `own`, `upper`, `lower`, `lapsed_allotted`, `expired` and `chosen` — first the
// claimer's own ALLOTTED tickets (its allotment is drawn on first; `drawn` while it has not
// lapsed), then up to `count` AVAILABLE tickets from the random start `start` (wrapping round below
// it), then, only for what is still missing, tickets of other partners' allotments that have lapsed
// (claimable from lapses_at on, before the sweeper returns them — except under WAITLIST_FIRST, where
// the sweeper offers them to the waitlist first, as it does the owner's own once lapsed), then holds
// that have expired (only under the POOL release policy: VOID retires their tickets and
// WAITLIST_FIRST offers them to the waitlist first, both through the sweeper; never another
// partner's hold drawn from its live allotment: that ticket goes back to the allotment); every row
// FOR UPDATE SKIP LOCKED (or FOR UPDATE in the single claim's second look). `chosen` numbers the
// tickets picked (slot) and says which are drawn from the claimer's allotment.
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
  /** `${partnerId}::uuid`: the claimer, whose allotment is drawn on first. */
  partner: Prisma.Sql;
  /** The random pick_order to start from. */
  start: number;
  /** How many tickets to pick (an SQL expression). */
  count: Prisma.Sql;
  /** FOR UPDATE SKIP LOCKED, or FOR UPDATE for a claim that waits for tickets in flight. */
  lock: 'FOR UPDATE SKIP LOCKED' | 'FOR UPDATE';
  /** Nothing is locked unless this holds (the gate's verdict). */
  when: Prisma.Sql;
}): Prisma.Sql {
  const { campaign: c, partner: p, count: n, when } = o;
  const lock = Prisma.raw(o.lock);
  return Prisma.sql`
    own_allotment AS MATERIALIZED (
      SELECT l.lapses_at IS NULL OR l.lapses_at > clock_timestamp() AS live
        FROM allotments l WHERE l.campaign_id = ${c} AND l.partner_id = ${p}
    ),
    own AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'ALLOTTED' AND t.allotted_to = ${p}
         AND ${when}
         -- once lapsed, under WAITLIST_FIRST its tickets go to the waitlist first, even the owner's
         AND (COALESCE((SELECT live FROM own_allotment), false) OR ${releasePolicy(c)} <> 'WAITLIST_FIRST')
       ORDER BY t.pick_order LIMIT ${n}
       ${lock}
    ),
    upper AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'AVAILABLE' AND t.pick_order >= ${o.start}::integer
         AND ${when}
       ORDER BY t.pick_order LIMIT ${n} - (SELECT count(*) FROM own)
       ${lock}
    ),
    lower AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'AVAILABLE' AND t.pick_order < ${o.start}::integer
         AND ${when}
       ORDER BY t.pick_order LIMIT ${n} - (SELECT count(*) FROM own) - (SELECT count(*) FROM upper)
       ${lock}
    ),
    lapsed_allotted AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'ALLOTTED' AND t.allotted_to <> ${p}
         AND t.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                        WHERE l.campaign_id = ${c} AND l.lapses_at <= clock_timestamp()))
         AND ${when} AND ${releasePolicy(c)} <> 'WAITLIST_FIRST'
       ORDER BY t.pick_order LIMIT ${n} - (SELECT count(*) FROM own) - (SELECT count(*) FROM upper) - (SELECT count(*) FROM lower)
       -- never waits, even in the waiting look: another partner's own pick locks these first
       FOR UPDATE SKIP LOCKED
    ),
    expired AS MATERIALIZED (
      SELECT a.campaign_id, a.id, a.ticket_id, a.from_allotment AND a.partner_id = ${p} AND COALESCE((SELECT live FROM own_allotment), false) AS drawn
        FROM allocations a
       WHERE a.campaign_id = ${c} AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
         AND ${when} AND ${releasePolicy(c)} = 'POOL'
         -- another partner's hold drawn from its live allotment returns to that allotment, not to us
         AND (NOT a.from_allotment OR a.partner_id = ${p}
              OR NOT EXISTS (SELECT 1 FROM allotments l WHERE l.campaign_id = ${c} AND l.partner_id = a.partner_id
                                AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())))
       ORDER BY a.expires_at, a.id
       LIMIT ${n} - (SELECT count(*) FROM own) - (SELECT count(*) FROM upper) - (SELECT count(*) FROM lower) - (SELECT count(*) FROM lapsed_allotted)
       FOR UPDATE OF a SKIP LOCKED
    ),
    chosen AS MATERIALIZED (
      SELECT id, drawn, row_number() OVER () AS slot
        FROM (SELECT id, COALESCE((SELECT live FROM own_allotment), false) AS drawn FROM own
              UNION ALL SELECT id, false FROM upper UNION ALL SELECT id, false FROM lower
              UNION ALL SELECT id, false FROM lapsed_allotted
              UNION ALL SELECT ticket_id, drawn FROM expired) x
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
         AND t.status = CASE WHEN t.id = ANY(ARRAY(SELECT ticket_id FROM expired)) THEN 'HELD'::ticket_status
                             WHEN t.id = ANY(ARRAY(SELECT id FROM own UNION ALL SELECT id FROM lapsed_allotted)) THEN 'ALLOTTED'::ticket_status
                             ELSE 'AVAILABLE'::ticket_status END
      RETURNING t.campaign_id, t.id, t.code
    )`;
}

/**
 * The campaign's release policy (POOL, WAITLIST_FIRST or VOID), for a statement to compare: one index
 * lookup of the campaign, run once per statement; the policy never changes after creation. Expired
 * holds are taken over only under POOL (VOID retires their tickets; WAITLIST_FIRST offers them to the
 * waitlist first, through the sweeper), and a lapsed allotment's tickets are claimable before the
 * sweep except under WAITLIST_FIRST.
 */
export const releasePolicy = (campaign: Prisma.Sql): Prisma.Sql =>
  Prisma.sql`(SELECT cp.release_policy FROM campaigns cp WHERE cp.id = ${campaign})`;

/** Upper end of pick_order (prisma/functions/tessera_random_pick_order.sql). */
const PICK_ORDER_RANGE = 2_147_483_647;

/** A random point of the pick order to start a pick from. */
export const randomPickStart = (): number => randomInt(PICK_ORDER_RANGE);
