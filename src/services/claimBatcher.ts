// Natural batching of single claims, per campaign and per process: while one claim statement for a
// campaign is in flight, the claims that arrive for it wait; when it returns, they all go together
// as one group statement (db/claimBatch.ts). A claim alone is sent at once, as the single claim
// it is — no window, no added latency at low load. Under load the added wait is at most one
// statement, and a batch holds at most `maxBatch` claims.
//
// Nothing correctness depends on lives here: the batch is only a way of sending claims; every
// decision is taken by the database, request by request, and whatever the group statement cannot
// decide (see claimBatch.ts) goes back to the single claim.
import type { Database } from '../db/client';
import { claimBatch, readBatch, type BatchOutcome, type BatchRequest } from '../db/claimBatch';
import { isConnectionLost } from '../db/pgErrors';
import { randomPickStart } from '../db/pickTickets';

export type Submitted = Omit<BatchRequest, 'holderRank' | 'partnerRank'>;

/**
 * SINGLE: it went alone; send it as a single claim. RETRY: the batch failed in a way a single claim
 * may repeat. BUSY: it waited longer than the pool's acquire timeout, or the queue was full — the
 * same answer (UNAVAILABLE, retry) as a request that found no free connection; nothing was done.
 */
export type BatchAnswer = BatchOutcome | { kind: 'SINGLE' } | { kind: 'RETRY' } | { kind: 'BUSY' } | { kind: 'FAILED'; error: unknown };

interface Waiting {
  request: Submitted;
  resolve: (answer: BatchAnswer) => void;
  timer: NodeJS.Timeout;
}

interface CampaignQueue {
  inFlight: boolean;
  waiting: Waiting[];
}


export class ClaimBatcher {
  private readonly queues = new Map<string, CampaignQueue>();

  constructor(
    private readonly db: Database,
    private readonly options: {
      maxBatch: number;
      /** Longest wait in the queue (the pool's acquire timeout: a claim waits no longer here than there). */
      maxWaitMs: number;
      /** Most claims waiting per campaign (the pool's max waiting); 0: no limit. */
      maxWaiting: number;
      onBatch?: (size: number) => void;
    },
  ) {}

  submit(campaignId: string, request: Submitted): Promise<BatchAnswer> {
    return new Promise((resolve) => {
      let queue = this.queues.get(campaignId);
      if (!queue) {
        queue = { inFlight: false, waiting: [] };
        this.queues.set(campaignId, queue);
      }
      if (!queue.inFlight && queue.waiting.length === 0) {
        // Alone: it goes as a single claim, and the campaign counts as busy until it is answered.
        queue.inFlight = true;
        resolve({ kind: 'SINGLE' });
        return;
      }
      if (this.options.maxWaiting > 0 && queue.waiting.length >= this.options.maxWaiting) {
        resolve({ kind: 'BUSY' });
        return;
      }
      const waiting: Waiting = {
        request,
        resolve,
        timer: setTimeout(() => {
          const q = this.queues.get(campaignId);
          if (q) q.waiting = q.waiting.filter((w) => w !== waiting);
          resolve({ kind: 'BUSY' });
        }, this.options.maxWaitMs),
      };
      queue.waiting.push(waiting);
    });
  }

  /** The caller of a SINGLE answer reports here when its claim is done, so the next batch can go. */
  done(campaignId: string): void {
    const queue = this.queues.get(campaignId);
    if (!queue) return;
    queue.inFlight = false;
    this.flush(campaignId, queue);
  }

  private flush(campaignId: string, queue: CampaignQueue): void {
    if (queue.inFlight) return;
    if (queue.waiting.length === 0) {
      this.queues.delete(campaignId);
      return;
    }
    // Two requests with one idempotency key never share a statement: the second waits for the next.
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    const keys = new Set<string>();
    for (const w of queue.waiting) {
      const key = w.request.idempotencyKey === null ? null : `${w.request.partnerId}:${w.request.idempotencyKey}`;
      if (batch.length >= this.options.maxBatch || (key !== null && keys.has(key))) rest.push(w);
      else {
        clearTimeout(w.timer);
        batch.push(w);
        if (key !== null) keys.add(key);
      }
    }
    queue.waiting = rest;
    queue.inFlight = true;
    if (batch.length === 1) {
      batch[0]!.resolve({ kind: 'SINGLE' });
      return;
    }
    this.options.onBatch?.(batch.length);
    const requests = rank(batch.map((w) => w.request));
    this.db.prisma
      .$transaction([claimBatch(this.db.prisma, campaignId, requests, randomPickStart())])
      .then(([rows]) => {
        const outcomes = readBatch(rows, requests);
        batch.forEach((w, i) => w.resolve(outcomes[i]!));
      })
      .catch((error: unknown) => {
        // The statement failed as a whole. If the connection died it may have committed: a keyed
        // request can ask again (its key finds what was done); one without a key must not.
        const lost = isConnectionLost(error);
        for (const w of batch) w.resolve(lost && w.request.idempotencyKey === null ? { kind: 'FAILED', error } : { kind: 'RETRY' });
      })
      .finally(() => {
        queue.inFlight = false;
        this.flush(campaignId, queue);
      });
  }
}

/** The k-th request of a holder (of a partner) in the batch is checked with quantity k. */
function rank(requests: Submitted[]): BatchRequest[] {
  const holders = new Map<string, number>();
  const partners = new Map<string, number>();
  return requests.map((r) => {
    const holderKey = `${r.partnerId}\u0000${r.holder}`;
    const holderRank = (holders.get(holderKey) ?? 0) + 1;
    const partnerRank = (partners.get(r.partnerId) ?? 0) + 1;
    holders.set(holderKey, holderRank);
    partners.set(r.partnerId, partnerRank);
    return { ...r, holderRank, partnerRank };
  });
}
