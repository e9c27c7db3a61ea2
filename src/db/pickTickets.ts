// Where a claim's pick starts: a random point of the pick order (claims spread over the AVAILABLE
// index instead of all skipping the same locked rows: prisma/functions/tessera_claim_tickets.sql
// says why).
import { randomInt } from 'node:crypto';

/** Upper end of pick_order (prisma/functions/tessera_random_pick_order.sql). */
const PICK_ORDER_RANGE = 2_147_483_647;

/** A random point of the pick order to start a pick from. */
export const randomPickStart = (): number => randomInt(PICK_ORDER_RANGE);
