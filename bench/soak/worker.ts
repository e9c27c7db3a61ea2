// One connection's loop: an operation drawn from the mix, its answer checked against what this
// worker was told before, and every allocation's expected end state kept for the end.
import type { makeClient } from './client';
import { HOLD_TTL_S, HOLD_USABLE_MS, MIX, OPS, type Op } from './settings';
import { acknowledged, loadedPerCampaign, unknownKeys, violation } from './windows';

export async function worker(n: number, call: ReturnType<typeof makeClient>['call'], keys: string[], campaigns: string[], runId: string, stop: { at: number }): Promise<void> {
  const key = keys[n % keys.length]!;
  const active: string[] = []; // this worker's ACTIVE allocations
  let holds: { id: string; at: number }[] = []; // its holds still worth confirming, newest last
  let seq = 0;
  const pick = (): Op => {
    let r = Math.random();
    for (const op of OPS) {
      r -= MIX[op];
      if (r < 0) return op;
    }
    return 'claim';
  };
  while (performance.now() < stop.at) {
    seq += 1;
    holds = holds.filter((h) => performance.now() - h.at < HOLD_USABLE_MS);
    let op = pick();
    // Without something to act on, the nearest operation that needs nothing.
    if (op === 'confirm' && holds.length === 0) op = 'hold';
    if (op === 'release' && active.length === 0 && holds.length === 0) op = 'claim';
    if (op === 'read' && active.length === 0) op = 'stats';
    const campaign = campaigns[Math.floor(Math.random() * campaigns.length)]!;

    if (op === 'claim' || op === 'hold') {
      const idempotencyKey = `soak-${runId}-${n}-${seq}`;
      const input: Record<string, unknown> = { campaignId: campaign, holder: `soak-${n}-${seq}`, metadata: { worker: n, seq }, idempotencyKey };
      if (op === 'hold') input.ttlSeconds = HOLD_TTL_S;
      const a = await call(op, key, { input });
      if (a.unknown) unknownKeys.add(idempotencyKey);
      const allocation = a.code === null ? a.payload?.allocation : null;
      if (a.code === null) {
        if (!allocation?.id) {
          violation(`${op} answered neither an allocation nor an error`);
          continue;
        }
        if (acknowledged.has(allocation.id)) violation(`allocation ${allocation.id} answered twice, for different keys`);
        const want = op === 'claim' ? 'ACTIVE' : 'HELD';
        if (allocation.status !== want) violation(`${op} answered an allocation ${allocation.status}, not ${want}`);
        acknowledged.set(allocation.id, { code: allocation.ticket.code, campaign, expect: op === 'claim' ? 'ACTIVE' : 'EXPIRED' });
        if (op === 'claim') active.push(allocation.id);
        else holds.push({ id: allocation.id, at: performance.now() });
      }
    } else if (op === 'confirm') {
      const hold = holds.pop()!;
      const record = acknowledged.get(hold.id)!;
      const a = await call(op, key, { id: hold.id });
      if (a.code === null) {
        if (a.payload?.allocation?.status !== 'ACTIVE') violation(`confirmHold answered ${a.payload?.allocation?.status}, not ACTIVE`);
        record.expect = 'ACTIVE';
        active.push(hold.id);
      } else {
        record.expect = a.code === 'HOLD_EXPIRED' ? 'EXPIRED' : 'ANY';
      }
    } else if (op === 'release') {
      const fromHolds = holds.length > 0 && (active.length === 0 || Math.random() < 0.25);
      const id = fromHolds ? holds.splice(Math.floor(Math.random() * holds.length), 1)[0]!.id : active.splice(Math.floor(Math.random() * active.length), 1)[0]!;
      const a = await call(op, key, { id });
      const record = acknowledged.get(id)!;
      if (a.code === null && a.payload?.allocation?.status !== 'RELEASED') violation(`releaseAllocation answered ${a.payload?.allocation?.status}, not RELEASED`);
      // A hold released just as it lapsed may be refused; whatever the refusal, only its end state is checked.
      record.expect = a.code === null ? 'RELEASED' : 'ANY';
    } else if (op === 'stats') {
      const a = await call(op, key, { id: campaign });
      const s = a.code === null ? a.payload?.stats : null;
      if (a.code === null) {
        if (!s) violation('campaign stats answered nothing');
        else if (s.allocated + s.held + s.available !== s.total || s.total !== loadedPerCampaign.get(campaign)) {
          violation(`stats ${JSON.stringify(s)}: allocated + held + available ≠ total, or total ≠ ${loadedPerCampaign.get(campaign)} loaded`);
        }
      }
    } else {
      const id = active[Math.floor(Math.random() * active.length)]!;
      const a = await call(op, key, { id });
      if (a.code === null) {
        const got = a.payload;
        // The worker is its only writer: what it reads must be what it was told.
        if (!got || got.status !== 'ACTIVE' || got.ticket?.code !== acknowledged.get(id)!.code) {
          violation(`allocation ${id} read as ${JSON.stringify(got)}, expected ACTIVE with ticket ${acknowledged.get(id)!.code}`);
        }
      }
    }
  }
}
