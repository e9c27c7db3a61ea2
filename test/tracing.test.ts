// OpenTelemetry tracing (docs/OBSERVABILITY.md): a claim that arrives with a W3C traceparent is
// traced inside the caller's trace — the operation, admission and the key's check, the rate limit,
// the claim, its time in the batcher, the group statement it shared (linked from every claim in the
// group), each SQL statement by its src/db/ name, the second look — and its webhook delivery gets a
// trace of its own linked to the claim's. Over graphql-ws too. Spans are read from the SDK's
// in-memory exporter; none may carry a key, a secret, a holder or metadata.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { diag } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { ADMISSION_SPAN_MS } from '../src/admission';
import { tracingConfigFrom, type TracingConfig } from '../src/tracing/config';
import { PooledIdGenerator } from '../src/tracing/ids';
import { startTracing, type Tracing } from '../src/tracing/start';
import { allocationSpan, inStatement, rememberAllocation, rootSpan, type Span } from '../src/tracing';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { until, untilSessionsWaitForLock } from './helpers/time';
import { connectSocket, runOverSocket, type SocketClient } from './helpers/ws';

/** The exporter of the tracing now running (a stopped SDK shuts its exporter down: each start gets a new one), and every one so far. */
let exporter: InMemorySpanExporter;
const exporters: InMemorySpanExporter[] = [];
const freshExporter = () => {
  exporter = new InMemorySpanExporter();
  exporters.push(exporter);
  return exporter;
};
const ALWAYS: TracingConfig = tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp' })!;
let tracing: Tracing;
let server: TestServer;
let partner: { id: string; apiKey: string };
const lines: Record<string, unknown>[] = [];
const sockets: SocketClient[] = [];

/** Everything secret or personal a test sends: no exported span may contain any of it. */
const SECRETS = {
  holder: `holder-${randomBytes(6).toString('hex')}`,
  metadata: `metadata-${randomBytes(6).toString('hex')}`,
  idempotencyKey: `key-${randomBytes(6).toString('hex')}`,
};

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** A caller's trace: its traceparent header, sampled unless said otherwise. */
function callerTrace(sampled = true) {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${sampled ? '01' : '00'}` };
}

async function post(key: string | null, query: string, variables: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { data?: Record<string, any>; errors?: { extensions?: { code?: string } }[] } };
}

const spans = () => exporter.getFinishedSpans();
const inTrace = (traceId: string) => spans().filter((s) => s.spanContext().traceId === traceId);
const named = (list: ReadableSpan[], name: string) => list.filter((s) => s.name === name);
const childrenOf = (list: ReadableSpan[], parent: ReadableSpan) => list.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
const one = (list: ReadableSpan[], name: string): ReadableSpan => {
  const found = named(list, name);
  if (found.length !== 1) throw new Error(`expected one span named ${name}, found ${found.length}: ${list.map((s) => s.name).join(', ')}`);
  return found[0]!;
};
/** Waits for the trace's operation span (ended after the answer was written). */
const operationOf = async (traceId: string, name: string) => {
  if (process.env.DEBUG_SPANS) setTimeout(() => console.log(spans().map((s) => `${s.name} ${s.spanContext().traceId} ${s.parentSpanContext?.spanId}`).join('\n')), 3000);
  await until(() => inTrace(traceId).some((s) => s.name === name), { message: `the span ${name} of trace ${traceId}`, timeoutMs: 5_000 });
  return one(inTrace(traceId), name);
};

beforeAll(async () => {
  tracing = startTracing(ALWAYS, { exporter: freshExporter() });
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  // Keys cached for a minute, as in production: a key's first use looks it up, the next ones do not.
  server = await startTestServer({ logger, config: { holdSweepIntervalMs: 0, apiKeyCacheTtlMs: 60_000 } });
  partner = await server.createPartner('Tracer');
});
afterAll(async () => {
  await Promise.all(sockets.map((s) => s.dispose()));
  await server.stop();
  await tracing.stop();
});

describe('a claim with a traceparent', () => {
  let caller: ReturnType<typeof callerTrace>;
  let trace: ReadableSpan[];
  let operation: ReadableSpan;
  let requestId: string;
  let allocationId: string;
  let campaignId: string;

  beforeAll(async () => {
    campaignId = await server.openCampaignWith(5);
    caller = callerTrace();
    const r = await post(partner.apiKey, CLAIM, { input: { campaignId, holder: SECRETS.holder, metadata: { note: SECRETS.metadata }, idempotencyKey: SECRETS.idempotencyKey } }, {
      traceparent: caller.traceparent,
      'x-request-id': 'partner-request-42',
    });
    expect(r.body.data!.claimTicket.error).toBeNull();
    allocationId = r.body.data!.claimTicket.allocation.id;
    requestId = r.headers.get('x-request-id')!;
    operation = await operationOf(caller.traceId, 'mutation Claim');
    trace = inTrace(caller.traceId);
  });

  test("the operation's span continues the caller's trace, named after the operation, with its type, cost, outcome and ids", () => {
    expect(operation.parentSpanContext).toMatchObject({ traceId: caller.traceId, spanId: caller.spanId, isRemote: true });
    expect(operation.kind).toBe(1); // SERVER
    expect(operation.attributes).toMatchObject({
      'graphql.operation.type': 'mutation',
      'graphql.operation.name': 'Claim',
      'tessera.outcome': 'ALLOCATED',
      'tessera.cost': expect.any(Number),
      'tessera.request_id': requestId,

      'tessera.campaign.id': campaignId,
      'tessera.allocation.id': allocationId,
      'tessera.client_request_id': 'partner-request-42',
      'tessera.partner.id': partner.id,
      'http.response.status_code': 200,
    });
  });

  test("admission is a span when it did work worth seeing — the key looked up in the database — not for a key from the cache", async () => {
    const fresh = await server.createPartner('Fresh key');
    const campaign = await server.openCampaignWith(1);
    const first = callerTrace();
    await post(fresh.apiKey, CLAIM, { input: { campaignId: campaign, holder: 'h' } }, { traceparent: first.traceparent });
    const op = await operationOf(first.traceId, 'mutation Claim');
    const admission = one(inTrace(first.traceId), 'tessera.admission');
    expect(admission.parentSpanContext?.spanId).toBe(op.spanContext().spanId);
    expect(admission.attributes['tessera.transport']).toBe('http');
    expect(op.attributes).toMatchObject({ 'tessera.partner.id': fresh.id });
    // The key now cached: admission takes microseconds, and makes no span — unless a loaded machine
    // (two test files at once) stretched those microseconds past ADMISSION_SPAN_MS: then the span is
    // there for its time, which it shows.
    const again = callerTrace();
    await post(fresh.apiKey, CLAIM, { input: { campaignId: campaign, holder: 'h2' } }, { traceparent: again.traceparent });
    await operationOf(again.traceId, 'mutation Claim');
    const slow = named(inTrace(again.traceId), 'tessera.admission').map((s) => s.duration[0] * 1e3 + s.duration[1] / 1e6);
    expect(slow.filter((ms) => ms < ADMISSION_SPAN_MS)).toEqual([]);
  });

  test('the batcher (time queued, group id and size, linked to the group) and the statement by its src/db/ name', () => {
    expect(operation.attributes).toMatchObject({ 'tessera.claim_group.queued_ms': expect.any(Number), 'tessera.claim.first_look': 'CLAIMED' });
    // A claim alone is a group of one: its statement, claimOne, is the group's span.
    const statement = one(trace, 'claimOne');
    expect(statement.parentSpanContext?.spanId).toBe(operation.spanContext().spanId);
    expect(statement.kind).toBe(2); // CLIENT
    expect(statement.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'tessera.claim_group.size': 1 });
    expect(operation.attributes['tessera.claim_group.id']).toBe(statement.spanContext().spanId);
    expect(statement.links.map((l) => l.context.spanId)).toEqual([operation.spanContext().spanId]);
  });

  test("the log line names the request id and the trace id together", () => {
    const line = lines.find((l) => l.msg === 'graphql' && l.requestId === requestId);
    expect(line).toMatchObject({ traceId: caller.traceId, clientRequestId: 'partner-request-42', operation: 'Claim' });
  });

  test('a replay of the key is traced the same way, its outcome the replay', async () => {
    const again = callerTrace();
    const r = await post(partner.apiKey, CLAIM, { input: { campaignId, holder: SECRETS.holder, metadata: { note: SECRETS.metadata }, idempotencyKey: SECRETS.idempotencyKey } }, { traceparent: again.traceparent });
    expect(r.body.data!.claimTicket.allocation.id).toBe(allocationId);
    await operationOf(again.traceId, 'mutation Claim');
    const replay = inTrace(again.traceId);
    expect(one(replay, 'mutation Claim').attributes['tessera.outcome']).toBe('REPLAYED');
    expect(one(replay, 'mutation Claim').attributes['tessera.claim.first_look']).toBe('PRIOR');
    expect(one(replay, 'findAllocationsByKey').attributes['db.response.returned_rows']).toBe(1);
  });
});

/**
 * `count` claims of `input(i)`, each from a caller trace of its own, sent while the campaign's gate
 * is held exclusively: the first two wait in their statements, the rest in the batcher, and once the
 * gate is let go the waiting ones go together. Their answers, and their spans as they end.
 */
async function claimsPastHeldGate(campaignId: string, count: number, input: (i: number) => Record<string, unknown>) {
  const blocker = await server.sql.connect();
  await blocker.query('BEGIN');
  await blocker.query('SELECT pg_advisory_xact_lock(1, hashtext($1::uuid::text))', [campaignId]);
  const callers = Array.from({ length: count }, () => callerTrace());
  const ours = new Set(callers.map((c) => c.traceId));
  const claims = Promise.all(callers.map((c, i) => post(partner.apiKey, CLAIM, { input: { campaignId, ...input(i) } }, { traceparent: c.traceparent })));
  await untilSessionsWaitForLock(server.sql, 2); // the two statements in flight wait for the gate
  await new Promise((resolve) => setTimeout(resolve, 500)); // and the other claims reach the batcher
  await blocker.query('COMMIT');
  blocker.release();
  const mine = () => spans().filter((s) => ours.has(s.spanContext().traceId));
  return { answers: await claims, mine };
}

test('claims that share a group statement: the group links every claim, and each claim names the group', async () => {
  const campaignId = await server.openCampaignWith(200);
  const { answers, mine } = await claimsPastHeldGate(campaignId, 40, (i) => ({ holder: `g${i}` }));
  expect(answers.every((a) => a.body.data!.claimTicket.allocation !== null)).toBe(true);
  await until(() => named(mine(), 'mutation Claim').length === answers.length, { message: 'every claim\'s operation span' });
  const groups = named(mine(), 'claimGroup');
  expect(groups.length).toBeGreaterThan(0);
  for (const group of groups) {
    const size = Number(group.attributes['tessera.claim_group.size']);
    expect(group.links).toHaveLength(size);
    const id = group.spanContext().spanId;
    const members = named(mine(), 'mutation Claim').filter((q) => q.attributes['tessera.claim_group.id'] === id);
    expect(members).toHaveLength(size);
    // Each claim of the group is in its own caller's trace, and names the group's span by its id.
    expect(new Set(members.map((m) => m.spanContext().traceId)).size).toBe(size);
    expect(group.links.map((l) => l.context.spanId).sort()).toEqual(members.map((m) => m.spanContext().spanId).sort());
    expect(group.attributes).toMatchObject({ 'db.system.name': 'postgresql' });
  }
});

test("claims with one key that waited together follow the group's one: linked from the group, named by it, answered PRIOR", async () => {
  const campaignId = await server.openCampaignWith(20);
  const key = `follow-${hex(4)}`;
  const { answers, mine } = await claimsPastHeldGate(campaignId, 12, () => ({ holder: 'f', idempotencyKey: key }));
  expect(new Set(answers.map((a) => a.body.data!.claimTicket.allocation?.id)).size).toBe(1);
  await until(() => named(mine(), 'mutation Claim').length === answers.length, { message: "every claim's operation span" });
  // Two went at once, each alone (a claimOne of its own); the ten that waited in the batcher went
  // after the first of those returned: one in the statement, nine following it.
  const group = named(mine(), 'claimOne').find((g) => g.links.length > 1)!;
  expect(group).toBeDefined();
  const id = group.spanContext().spanId;
  const served = named(mine(), 'mutation Claim').filter((q) => q.attributes['tessera.claim_group.id'] === id);
  expect(served).toHaveLength(10);
  expect(group.attributes['tessera.claim_group.size']).toBe(1);
  expect(group.links.map((l) => l.context.spanId).sort()).toEqual(served.map((m) => m.spanContext().spanId).sort());
  expect(served.map((m) => m.attributes['tessera.claim.first_look'])).toEqual(Array.from({ length: 10 }, () => 'PRIOR'));
});

test("a client that leaves mid-claim: its operation's span ends then and says so; the claim goes on", async () => {
  const campaignId = await server.openCampaignWith(5);
  const blocker = await server.sql.connect();
  await blocker.query('BEGIN');
  await blocker.query('SELECT pg_advisory_xact_lock(1, hashtext($1::uuid::text))', [campaignId]);
  const caller = callerTrace();
  const leaving = new AbortController();
  const claim = fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${partner.apiKey}`, traceparent: caller.traceparent },
    body: JSON.stringify({ query: CLAIM, variables: { input: { campaignId, holder: 'gone' } } }),
    signal: leaving.signal,
  }).catch((error: Error) => error.name);
  try {
    await untilSessionsWaitForLock(server.sql, 1); // the claim's statement waits for the gate
    leaving.abort();
    expect(await claim).toBe('AbortError');
    const operation = await operationOf(caller.traceId, 'mutation Claim');
    expect(operation.attributes).toMatchObject({ 'tessera.client.gone': true, 'tessera.outcome': 'CLIENT_GONE' });
    expect(operation.attributes['http.response.status_code']).toBeUndefined();
  } finally {
    await blocker.query('COMMIT');
    blocker.release();
  }
  // Its statement goes on once the gate is let go, and the ticket is the holder's.
  await until(async () => (await server.sql.query("SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND holder = 'gone'", [campaignId])).rows[0].n === 1, {
    message: "the claim of the client that left, committed",
  });
  await until(() => named(inTrace(caller.traceId), 'claimOne').length === 1, { message: "the claim's statement span" });
});

test('a refused claim goes through the second look: its span, its claimTicket statement, the refusal as the outcome', async () => {
  const campaignId = await server.openCampaignWith(0);
  const caller = callerTrace();
  const r = await post(partner.apiKey, CLAIM, { input: { campaignId, holder: 'late' } }, { traceparent: caller.traceparent });
  expect(r.body.data!.claimTicket.error.code).toBe('SOLD_OUT');
  const operation = await operationOf(caller.traceId, 'mutation Claim');
  expect(operation.attributes['tessera.outcome']).toBe('SOLD_OUT');
  const trace = inTrace(caller.traceId);
  const second = one(trace, 'tessera.claim.second_look');
  expect(second.parentSpanContext?.spanId).toBe(operation.spanContext().spanId);
  expect(childrenOf(trace, second).map((s) => s.name)).toEqual(['claimTicket']);
  expect(operation.attributes['tessera.claim.first_look']).toBe('UNDECIDED');
});

test("a statement that fails: its span has the SQLSTATE, not the statement's text", async () => {
  const root = rootSpan('test.failing', {})!;
  await expect(inStatement(root, 'divideByZero', () => server.db.prisma.$queryRawUnsafe('SELECT 1 / 0 AS never'))).rejects.toThrow();
  root.end();
  const failed = spans().find((s) => s.attributes['db.response.status_code'] === '22012');
  expect(failed).toBeDefined();
  expect(failed!.status.code).toBe(2);
  expect(JSON.stringify(failed!.attributes)).not.toContain('1 / 0');
});

test('an unauthenticated request is traced: admission refuses it, and the operation says why', async () => {
  const caller = callerTrace();
  const r = await post('tsp_000000000000_' + 'x'.repeat(43), CLAIM, { input: { campaignId: '00000000-0000-0000-0000-000000000000', holder: 'h' } }, { traceparent: caller.traceparent });
  expect(r.status).toBe(401);
  const operation = await operationOf(caller.traceId, 'POST /graphql');
  expect(operation.attributes).toMatchObject({ 'tessera.outcome': 'UNAUTHENTICATED', 'http.response.status_code': 401 });
  expect(named(inTrace(caller.traceId), 'tessera.admission')).toHaveLength(1);
});

describe('graphql-ws', () => {
  test("connection_init and a subscribe message continue the traceparent they carry; a refusal is traced too", async () => {
    const connection = callerTrace();
    const subscribe = callerTrace();
    const socket = connectSocket(server.url, partner.apiKey, { connectionParams: { traceparent: connection.traceparent } });
    sockets.push(socket);
    const campaignId = await server.openCampaignWith(3);
    const sub = socket.client.iterate({
      query: 'subscription Stats($c: ID!) { campaignStats(id: $c) { available } }',
      variables: { c: campaignId },
      extensions: { traceparent: subscribe.traceparent },
    });
    await sub.next();
    await sub.return?.();
    const init = await operationOf(connection.traceId, 'graphql-ws connection_init');
    expect(init.parentSpanContext?.spanId).toBe(connection.spanId);
    expect(init.attributes).toMatchObject({ 'tessera.transport': 'ws', 'tessera.outcome': 'OK', 'tessera.partner.id': partner.id });

    const op = await operationOf(subscribe.traceId, 'subscription Stats');
    expect(op.parentSpanContext?.spanId).toBe(subscribe.spanId);
    expect(op.attributes).toMatchObject({ 'graphql.operation.type': 'subscription', 'tessera.outcome': 'OK', 'tessera.cost': expect.any(Number) });
    const trace = inTrace(subscribe.traceId);
    expect(trace.map((s) => s.name)).toEqual(['subscription Stats']);

    // A mutation sent over the socket is refused: traced, with the refusal's code.
    const refused = callerTrace();
    const outcome = await runOverSocket(socket, { query: 'mutation M($c: ID!) { closeCampaign(id: $c) { campaign { id } } }', variables: { c: campaignId }, extensions: { traceparent: refused.traceparent } } as never);
    expect(outcome.error).toBeDefined();
    const refusedOp = await operationOf(refused.traceId, 'mutation M');
    expect(refusedOp.attributes['tessera.outcome']).toBe('BAD_REQUEST');
  });
});

test("a webhook delivery is a trace of its own, linked to the claim's, and the receiver gets its traceparent", async () => {
  const received: { traceparent?: string; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ traceparent: req.headers.traceparent as string | undefined, body: Buffer.concat(chunks).toString('utf8') });
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  let endpointId: string | undefined;
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const made = await post(ADMIN_KEY, 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id } secret } }', { input: { url, events: ['ALLOCATION_CREATED'], partnerId: partner.id } });
    const secret: string = made.body.data!.createWebhook.secret;
    endpointId = made.body.data!.createWebhook.endpoint.id;
    const campaignId = await server.openCampaignWith(2);
    const caller = callerTrace();
    const r = await post(partner.apiKey, CLAIM, { input: { campaignId, holder: SECRETS.holder } }, { traceparent: caller.traceparent });
    const allocationId: string = r.body.data!.claimTicket.allocation.id;
    await until(() => received.some((d) => d.body.includes(allocationId)), { message: 'the delivery of the claim' });
    await until(() => named(spans(), 'tessera.webhook.delivery').some((s) => s.links.some((l) => l.context.traceId === caller.traceId)), { message: 'the delivery span' });
    const delivery = named(spans(), 'tessera.webhook.delivery').find((s) => s.links.some((l) => l.context.traceId === caller.traceId))!;
    expect(delivery.spanContext().traceId).not.toBe(caller.traceId);
    expect(delivery.parentSpanContext).toBeUndefined();
    expect(delivery.attributes).toMatchObject({ 'tessera.outcome': 'DELIVERED', 'http.response.status_code': 200, 'tessera.webhook.event.type': 'ALLOCATION_CREATED', 'tessera.retry.attempt': 1 });
    expect(delivery.links[0]!.context.spanId).toBe((await operationOf(caller.traceId, 'mutation Claim')).spanContext().spanId);
    const sent = received.find((d) => d.body.includes(allocationId))!;
    expect(sent.traceparent).toBe(`00-${delivery.spanContext().traceId}-${delivery.spanContext().spanId}-01`);
    // Its statements (recording the attempt) are its children, by name.
    expect(childrenOf(spans(), delivery).map((s) => s.name)).toContain('recordAttempt');
    const all = JSON.stringify(spans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));
    expect(all).not.toContain(secret);
    expect(all).not.toContain(url);
  } finally {
    if (endpointId) await post(ADMIN_KEY, 'mutation($id: ID!) { deleteWebhook(id: $id) }', { id: endpointId });
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
});

describe('sampling', () => {
  /** Tracing again with this configuration for the tests of the block. */
  const restart = async (env: NodeJS.ProcessEnv) => {
    await tracing.stop();
    tracing = startTracing(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', ...env })!, { exporter: freshExporter() });
  };
  afterAll(() => restart({}));

  test('at ratio 0 a claim that succeeds is not exported, a refusal and an error are, whole', async () => {
    await restart({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    const campaignId = await server.openCampaignWith(1);
    const ok = await post(partner.apiKey, CLAIM, { input: { campaignId, holder: 'a' } });
    expect(ok.body.data!.claimTicket.error).toBeNull();
    const soldOut = await post(partner.apiKey, CLAIM, { input: { campaignId, holder: 'b' } });
    expect(soldOut.body.data!.claimTicket.error.code).toBe('SOLD_OUT');
    const bad = await post(partner.apiKey, CLAIM, { input: { campaignId: 'not-an-id', holder: 7 } });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    await until(() => named(spans(), 'mutation Claim').length >= 2, { message: 'the kept operations' });
    const operations = named(spans(), 'mutation Claim');
    expect(operations.map((s) => s.attributes['tessera.outcome']).sort()).toEqual(['BAD_USER_INPUT', 'SOLD_OUT']);
    // The kept traces are whole: the refused claim's statements with them.
    const refused = operations.find((s) => s.attributes['tessera.outcome'] === 'SOLD_OUT')!;
    expect(inTrace(refused.spanContext().traceId).map((s) => s.name)).toEqual(expect.arrayContaining(['claimOne', 'tessera.claim.second_look', 'claimTicket']));
    for (const span of spans()) expect(span.spanContext().traceFlags & 1).toBe(1);
  });

  test("a caller's sampled flag is followed: sampled kept at ratio 0, not sampled dropped unless refused", async () => {
    await restart({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    const campaignId = await server.openCampaignWith(5);
    const sampled = callerTrace(true);
    const notSampled = callerTrace(false);
    await post(partner.apiKey, CLAIM, { input: { campaignId, holder: 'a' } }, { traceparent: sampled.traceparent });
    await post(partner.apiKey, CLAIM, { input: { campaignId, holder: 'b' } }, { traceparent: notSampled.traceparent });
    await operationOf(sampled.traceId, 'mutation Claim');
    // Give the other its time to have ended, then check it is absent.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(inTrace(notSampled.traceId)).toEqual([]);
  });
});

test('no exported span carries a key, a secret, a holder, metadata or an idempotency key', () => {
  const text = JSON.stringify(
    exporters.flatMap((e) => e.getFinishedSpans()).map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, links: s.links.map((l) => l.attributes ?? {}), status: s.status })),
  );
  // The key's secret is all after `tsp_<prefix>_`: base64url, which may itself hold '_' (even first).
  const keySecret = partner.apiKey.split('_').slice(2).join('_');
  expect(keySecret.length).toBeGreaterThanOrEqual(40);
  for (const secret of [partner.apiKey, keySecret, ADMIN_KEY, SECRETS.holder, SECRETS.metadata, SECRETS.idempotencyKey]) expect(text).not.toContain(secret);
});

describe('configuration (the OTEL_* variables)', () => {
  test('off unless an endpoint or an exporter is named; OTEL_SDK_DISABLED and "none" turn it off', () => {
    expect(tracingConfigFrom({})).toBeNull();
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBeNull();
    expect(tracingConfigFrom({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBeNull();
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toMatchObject({ exporter: { kind: 'otlp', protocol: 'http/protobuf' }, ratio: 1, parentBased: true, serviceName: 'tessera' });
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toMatchObject({ exporter: { kind: 'otlp', protocol: 'http/json' } });
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'console', OTEL_SERVICE_NAME: 'tickets-eu' })).toMatchObject({ exporter: { kind: 'console' }, serviceName: 'tickets-eu' });
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=tessera%20eu' })!.serviceName).toBe('tessera eu');
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toMatchObject({ ratio: 0.25, parentBased: false });
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_always_off' })).toMatchObject({ ratio: 0, parentBased: true });
  });

  test('a value Tessera cannot honour names the variable', () => {
    expect(() => tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
    expect(() => tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json/);
    expect(() => tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER must be one of/);
    expect(() => tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_MAX_QUEUE_SIZE: 'lots' })).toThrow(/OTEL_BSP_MAX_QUEUE_SIZE/);
  });
});

describe('ids (PooledIdGenerator)', () => {
  test('trace and span ids are lower-case hex of 16 and 8 bytes, never all zero, none drawn twice across many pools', () => {
    const ids = new PooledIdGenerator();
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i += 1) {
      const traceId = ids.generateTraceId();
      const spanId = ids.generateSpanId();
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(traceId).not.toBe('0'.repeat(32));
      expect(spanId).not.toBe('0'.repeat(16));
      seen.add(traceId).add(spanId);
    }
    expect(seen.size).toBe(40_000);
  });
});

describe('delivery links (the table of recent allocations)', () => {
  test('recent allocations are found, most of those long ago are forgotten, unknown ids are not found', () => {
    const traceIdOf = (n: number) => n.toString(16).padStart(32, '0');
    const spanFor = (n: number) => ({ spanContext: () => ({ traceId: traceIdOf(n), spanId: '00f067aa0ba902b7', traceFlags: 1 }) }) as unknown as Span;
    const idOf = (n: number) => `0c2a9f7e-1b9d-4c1e-9f0a-${(n * 2654435761 % 2 ** 32).toString(16).padStart(12, '0')}`;
    for (let n = 1; n <= 200_000; n += 1) rememberAllocation(idOf(n), spanFor(n));
    const found = (from: number, to: number) => {
      let count = 0;
      for (let n = from; n <= to; n += 1) if (allocationSpan(idOf(n))?.traceId === traceIdOf(n)) count += 1;
      return count;
    };
    expect(found(199_001, 200_000)).toBeGreaterThanOrEqual(990); // the last 1,000: a later one rarely takes a slot
    expect(found(1, 1_000)).toBeLessThan(700); // 199,000 allocations later: about half of the slots taken
    expect(allocationSpan('0c2a9f7e-1b9d-4c1e-9f0a-000000000000')).toBeUndefined();
    rememberAllocation('untraced', undefined);
    expect(allocationSpan('untraced')).toBeUndefined();
  });
});

describe("the SDK's complaints in the log", () => {
  test('a span changed after it ended (a client gone mid-claim) is not logged; other complaints are', async () => {
    const logged: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => logged.push(JSON.parse(line) as Record<string, unknown>) });
    await tracing.stop();
    tracing = startTracing(ALWAYS, { exporter: freshExporter(), logger });
    try {
      const span = rootSpan('tessera.test', {})!;
      span.end();
      span.setAttribute('tessera.outcome', 'ALLOCATED'); // what the claim sets once its client has gone
      expect(logged).toEqual([]);
      diag.warn('an export failed');
      expect(logged.map((line) => line.msg)).toEqual(['tracing: an export failed']);
    } finally {
      await tracing.stop();
      tracing = startTracing(ALWAYS, { exporter: freshExporter() });
    }
  });
});
