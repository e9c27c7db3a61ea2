// The storm of a close race (test/close.test.ts, and across instances in test/cluster/): clients
// claiming one after another, each until a claim it sent after closeCampaign returned is refused —
// so the storm is still going when close returns, however fast or slow the machine is.
import type { ClaimPayload } from './testServer';

export interface CloseRace {
  /** Ids of the allocations answered, in the order they were answered. */
  readonly granted: string[];
  /** What each claim sent after close returned was answered: an error code, ALLOCATED, or the whole body. */
  readonly sentAfterClose: string[];
  /** Call at once when closeCampaign has returned: claims sent from then on count as after it. */
  closeReturned(): void;
  /** Every client done; rejects on an answer that is neither a ticket nor CAMPAIGN_NOT_OPEN. */
  readonly done: Promise<void>;
}

export function closeRace(clients: number, claim: (client: number, attempt: number) => Promise<{ data?: ClaimPayload | null }>): CloseRace {
  let closed = false;
  const granted: string[] = [];
  const sentAfterClose: string[] = [];
  const client = async (k: number) => {
    for (let i = 0; ; i += 1) {
      const afterClose = closed;
      const body = await claim(k, i);
      const answer = body.data?.claimTicket;
      if (answer?.allocation) granted.push(answer.allocation.id);
      if (afterClose) sentAfterClose.push(answer?.error?.code ?? (answer?.allocation ? 'ALLOCATED' : JSON.stringify(body)));
      if (answer?.error?.code === 'CAMPAIGN_NOT_OPEN') {
        if (afterClose) return;
        continue; // refused before close's answer reached us: once more after it
      }
      // Anything else — SOLD_OUT after a starved close, an error — fails the race.
      if (!answer?.allocation) throw new Error(`unexpected answer ${JSON.stringify(body)}`);
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, k) => client(k))).then(() => undefined);
  return {
    granted,
    sentAfterClose,
    closeReturned: () => {
      closed = true;
    },
    done,
  };
}
