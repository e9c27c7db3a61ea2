// Which claimTicket requests share a first look, per process. A request that arrives while fewer
// than `maxInFlight` first looks are in flight goes at once, alone: no window, no added latency at
// low load. Those that arrive while `maxInFlight` are in flight wait; as soon as one returns, the
// waiting ones go together — up to `maxBatch` — as one call and one commit (firstLook.ts). Under
// load the added wait is at most one statement.
//
// With the dialect's claimGroups 'campaign' (Citus) a group is of one campaign: each campaign then
// has its own `maxInFlight` statements, within `maxInFlightTotal` for the process.
//
// Requests with one idempotency key never share a call (each would take its own ticket). One that
// waits while a request with its key, for its campaign, goes in a group follows that request
// instead of waiting for a call of its own: when the leader claimed (or found its key's allocation),
// the follower is answered PRIOR — its replay reads that allocation and compares its own request
// with it (service.ts) — and otherwise the follower gets the second look, as an undecided request
// does. A burst of one key's retries costs one call, not one each.
//
// Nothing correctness depends on lives here: a group is only a way of sending claims. Every decision
// is taken by the database, request by request, and whatever the first look cannot decide goes to
// the second look (service.ts).
import { randomPickStart } from '../db/pickTickets';
import type { Database } from '../db/client';
import { isConnectionLost, isConnectTimeout } from '../db/pgErrors';
import { ATTR, childSpan, failed, SpanKind, type Link, type Span } from '../tracing';
import { firstLookAlone, firstLookTogether, type FirstLook, type FirstLookRequest } from './firstLook';

/** A request as the service submits it; the batcher gives it its pick start. */
export type Submitted = Omit<FirstLookRequest, 'start'>;

/**
 * The first look's answer, or: RETRY — the statement failed in a way the second look may repeat;
 * FAILED — the connection died under a request without a key (it may have committed: not repeated);
 * BUSY — it waited longer than the pool's acquire timeout, or the queue was full: the same answer
 * (UNAVAILABLE, retry) as a request that found no free connection; nothing was done.
 */
export type BatchAnswer = FirstLook | { kind: 'RETRY' } | { kind: 'BUSY' } | { kind: 'FAILED'; error: unknown };

interface Waiting {
  request: Submitted;
  resolve: (answer: BatchAnswer) => void;
  timer: NodeJS.Timeout;
  /** Requests with this one's key, for its campaign, answered from its answer (see above). */
  followers?: Waiting[];
  /** Tracing on: the claim's operation span (its time here, its group, its first look go on it), and when it arrived. */
  span?: Span;
  since?: number;
}

export class ClaimBatcher {
  private inFlight = 0;
  /** Statements in flight per group (groupOf): one entry, '', unless groups are per campaign. */
  private readonly inFlightOf = new Map<string, number>();
  private waiting: Waiting[] = [];

  constructor(
    private readonly db: Database,
    private readonly options: {
      /** Most requests one group statement serves (CLAIM_BATCH_MAX); 1: every claim alone. */
      maxBatch: number;
      /** Most claim statements at once from this process, or per campaign where the dialect groups per campaign. */
      maxInFlight: number;
      /** With the dialect's claimGroups 'campaign': most claim statements at once from this process, all campaigns together. */
      maxInFlightTotal?: number;
      /** Longest wait in the queue (the pool's acquire timeout: a claim waits no longer here than there). */
      maxWaitMs: number;
      /** Most claims waiting (the pool's max waiting); 0: no limit. */
      maxWaiting: number;
      onBatch?: (size: number) => void;
    },
  ) {}

  /**
   * The first look of `request`. `trace` (tracing on): the claim's operation span, which gets its
   * time queued here, its group (id, size, a link to the group's statement span) and the first
   * look's answer — attributes of the span the claim already has, not a span of their own: a span
   * costs the SDK more than the wait it would show.
   */
  submit(request: Submitted, trace?: Span): Promise<BatchAnswer> {
    return new Promise((resolve) => this.enqueue(request, resolve, trace));
  }

  private enqueue(request: Submitted, resolve: (answer: BatchAnswer) => void, span?: Span): void {
    const group = this.groupOf(request);
    const since = span === undefined ? undefined : performance.now();
    if (this.canSend(group) && !this.waiting.some((w) => this.groupOf(w.request) === group)) {
      this.send(group, [{ request, resolve, timer: undefined as unknown as NodeJS.Timeout, span, since }]);
      return;
    }
    if (this.options.maxWaiting > 0 && this.waiting.length >= this.options.maxWaiting) {
      resolve({ kind: 'BUSY' });
      return;
    }
    const waiting: Waiting = {
      request,
      resolve,
      timer: setTimeout(() => {
        this.waiting = this.waiting.filter((w) => w !== waiting);
        resolve({ kind: 'BUSY' });
      }, this.options.maxWaitMs),
      span,
      since,
    };
    this.waiting.push(waiting);
  }

  private groupOf(request: Submitted): string {
    return this.db.dialect.claimGroups === 'campaign' ? request.campaignId : '';
  }

  private canSend(group: string): boolean {
    const total = this.db.dialect.claimGroups === 'campaign' ? (this.options.maxInFlightTotal ?? this.options.maxInFlight) : this.options.maxInFlight;
    return this.inFlight < total && (this.inFlightOf.get(group) ?? 0) < this.options.maxInFlight;
  }

  private flush(): void {
    for (;;) {
      // The longest-waiting request whose group may send now leads; its group's others go with it.
      const first = this.waiting.find((w) => this.canSend(this.groupOf(w.request)));
      if (first === undefined) return;
      const group = this.groupOf(first.request);
      // Two requests with one idempotency key never share a statement: the second follows the first
      // when it is for the same campaign, and waits for the next statement otherwise.
      const batch: Waiting[] = [];
      const rest: Waiting[] = [];
      const keys = new Map<string, Waiting>();
      for (const w of this.waiting) {
        const key = w.request.idempotencyKey === null ? null : `${w.request.partnerId}:${w.request.idempotencyKey}`;
        const leader = key === null ? undefined : keys.get(key);
        if (leader !== undefined && leader.request.campaignId === w.request.campaignId) {
          clearTimeout(w.timer);
          (leader.followers ??= []).push(w);
        } else if (this.groupOf(w.request) !== group || batch.length >= this.options.maxBatch || leader !== undefined) rest.push(w);
        else {
          clearTimeout(w.timer);
          batch.push(w);
          if (key !== null) keys.set(key, w);
        }
      }
      this.waiting = rest;
      this.send(group, batch);
    }
  }

  private send(group: string, batch: Waiting[]): void {
    this.inFlight += 1;
    this.inFlightOf.set(group, (this.inFlightOf.get(group) ?? 0) + 1);
    const requests = withStarts(batch.map((w) => w.request));
    if (batch.length > 1) this.options.onBatch?.(batch.length);
    const statement = requests.length === 1 ? 'claimOne' : this.db.dialect.claimGroups === 'campaign' ? 'claimCampaignGroup' : 'claimGroup';
    const groupSpan = batch[0]!.span === undefined ? undefined : this.groupSpan(batch, statement);
    const answered: Promise<FirstLook[]> =
      requests.length === 1
        ? firstLookAlone(this.db.prisma, this.db.dialect, requests[0]!).then((answer) => [answer])
        : firstLookTogether(this.db.prisma, this.db.dialect, requests);
    answered
      .then((answers) => {
        batch.forEach((w, i) => {
          const answer = answers[i]!;
          w.span?.setAttribute(ATTR.firstLook, answer.kind);
          w.resolve(answer);
          if (w.followers === undefined) return;
          const followed = followerAnswer(answer);
          for (const f of w.followers) {
            f.span?.setAttribute(ATTR.firstLook, followed.kind);
            f.resolve(followed);
          }
        });
      })
      .catch((error: unknown) => {
        if (groupSpan) failed(groupSpan, error);
        // The statement failed as a whole. If the connection died it may have committed: a keyed
        // request can ask again (its key finds what was done); one without a key must not. No
        // connection in time, or a server found not answering (stallWatch.ts): asking again now
        // would only wait as long again — the answer is UNAVAILABLE, and the client's retry later.
        const lost = isConnectionLost(error);
        const now = isConnectTimeout(error) || this.db.unresponsive() !== null;
        for (const w of withFollowers(batch)) w.resolve(now || (lost && w.request.idempotencyKey === null) ? { kind: 'FAILED', error } : { kind: 'RETRY' });
      })
      .finally(() => {
        groupSpan?.end();
        this.inFlight -= 1;
        const left = (this.inFlightOf.get(group) ?? 1) - 1;
        if (left === 0) this.inFlightOf.delete(group);
        else this.inFlightOf.set(group, left);
        this.flush();
      });
  }

  /**
   * Tracing on: the group's statement as one CLIENT span named by its call (claimOne,
   * claimGroup, claimCampaignGroup), under the first claim's operation span and linking every claim
   * that shares it (followers too); each claim's span gets the group's id (the statement span's id) and its time
   * queued. (Not a link back as well: a link per claim is serialized with every span, and the id
   * names the group's span already — docs/OBSERVABILITY.md, "What tracing costs".)
   */
  private groupSpan(batch: Waiting[], statement: string): Span {
    const served = withFollowers(batch);
    const links: Link[] = [];
    for (const w of served) if (w.span) links.push({ context: w.span.spanContext() });
    const group = childSpan(batch[0]!.span, statement, { 'db.system.name': 'postgresql', [ATTR.groupSize]: batch.length }, { kind: SpanKind.CLIENT, links })!;
    const id = group.spanContext().spanId;
    const now = performance.now();
    for (const w of served) {
      if (!w.span) continue;
      w.span.setAttribute(ATTR.groupId, id);
      w.span.setAttribute(ATTR.queuedMs, Math.round((now - w.since!) * 1000) / 1000);
    }
    return group;
  }
}

/** A follower's answer from its leader's: the key's allocation when the leader has one, else the second look. */
function followerAnswer(answer: FirstLook): BatchAnswer {
  if (answer.kind === 'CLAIMED') return { kind: 'PRIOR', campaignId: answer.allocation.campaignId, allocationId: answer.allocation.id };
  return answer.kind === 'PRIOR' ? answer : { kind: 'UNDECIDED' };
}

/** A group's requests and the requests following them. */
const withFollowers = (batch: readonly Waiting[]): Waiting[] => batch.flatMap((w) => [w, ...(w.followers ?? [])]);

/** One pick start per campaign: the group's claims on a campaign take neighbouring tickets. */
function withStarts(requests: Submitted[]): FirstLookRequest[] {
  const starts = new Map<string, number>();
  return requests.map((r) => {
    let start = starts.get(r.campaignId);
    if (start === undefined) starts.set(r.campaignId, (start = randomPickStart()));
    return { ...r, start };
  });
}
