// An operation charged more points than its key can ever spend at once — the larger of its rate and
// its burst (src/rateLimit.ts's keyBudget) — is answered COST_EXCEEDS_ALLOWANCE (HTTP 400, no
// Retry-After), not RATE_LIMITED: no wait would let it run. Nothing is spent on it.
import { GraphQLError } from 'graphql';
import type { Viewer } from '../src/auth';
import { createLogger } from '../src/logger';
import type { Metrics } from '../src/metrics';
import { createOperationControls } from '../src/operations';
import { createRateLimits, keyBudget } from '../src/rateLimit';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';

const DEFAULTS = { pointsPerSecond: 20_000, burstPoints: 100_000 };
const codes = (errors: { extensions?: Record<string, unknown> }[] | undefined) => (errors ?? []).map((e) => e.extensions?.code);
/** A page of `n` campaigns: 1 point, and 1 more per 10 objects (src/cost.ts). */
const page = (n: number) => `query { campaigns(first: ${n}) { edges { node { id } } } }`;

describe('keyBudget', () => {
  test('the allowance is the larger bucket: a charge is never split between the two', () => {
    expect(keyBudget(DEFAULTS, 1)).toEqual({ rate: 1, burst: 5, allowance: 5 });
    expect(keyBudget(DEFAULTS, 20_000)).toEqual({ rate: 20_000, burst: 100_000, allowance: 100_000 });
    expect(keyBudget({ pointsPerSecond: 10, burstPoints: 5 }, 10)).toEqual({ rate: 10, burst: 5, allowance: 10 });
    expect(keyBudget({ pointsPerSecond: 3, burstPoints: 0 }, 3)).toEqual({ rate: 3, burst: 0, allowance: 3 });
  });

  test.each([
    [1, 100_000, 20_000],
    [10, 5, 10],
    [7, 0, 20],
  ])('the limiter takes the allowance at once and never one point more (rate %i, burst points %i, default rate %i)', async (rate, burstPoints, pointsPerSecond) => {
    const limits = createRateLimits({ pointsPerSecond, burstPoints, authFailuresPerMinute: 60 });
    const { allowance } = keyBudget({ pointsPerSecond, burstPoints }, rate);
    expect(await limits.consume('over', allowance + 1, rate)).toEqual({ allowed: false, allowance });
    // Refused as such, it spent nothing: the whole allowance is still there.
    expect(await limits.consume('over', allowance, rate)).toEqual({ allowed: true });
    // A fresh key takes the allowance in one go.
    expect(await limits.consume('fresh', allowance, rate)).toEqual({ allowed: true });
  });
});

describe('the charge, for every transport (operations.ts)', () => {
  const logger = createLogger({ env: 'test', level: 'silent' });
  const controls = createOperationControls({
    limits: { maxDepth: 10, maxAliases: 15, maxCost: 20_000, maxTokens: 30_000, introspection: true },
    rateLimits: createRateLimits({ ...DEFAULTS, authFailuresPerMinute: 60 }),
    logger,
    // charge() records nothing: the transports record the operation.
    metrics: {} as Metrics,
  });
  const partner = (rateLimit: number | null) => ({ kind: 'partner', partnerId: `p-${Math.random()}`, rateLimit }) as unknown as Viewer;

  test('over the allowance: COST_EXCEEDS_ALLOWANCE with the charge and the allowance, 400, no Retry-After', async () => {
    const error = await controls.charge(partner(1), { cost: 0, points: 6 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GraphQLError);
    const { extensions } = error as GraphQLError;
    expect(extensions).toMatchObject({ code: 'COST_EXCEEDS_ALLOWANCE', points: 6, allowance: 5, http: { status: 400 } });
    expect((extensions.http as { headers?: Map<string, string> }).headers?.get('retry-after')).toBeUndefined();
  });

  test('at the allowance: charged', async () => {
    await expect(controls.charge(partner(1), { cost: 0, points: 5 })).resolves.toBeUndefined();
  });
});

describe('over HTTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ config: { env: 'production' } });
  });
  afterAll(() => server.stop());

  const limitedPartner = async (pointsPerSecond: number) => {
    const partner = await server.createPartner();
    const set = await server.gql(ADMIN_KEY, 'mutation($p: ID!, $n: Int) { setPartnerRateLimit(partnerId: $p, pointsPerSecond: $n) { partner { rateLimit } } }', { p: partner.id, n: pointsPerSecond });
    expect(set.body.data!.setPartnerRateLimit.partner.rateLimit).toBe(pointsPerSecond);
    return partner;
  };

  test('a page that costs more than the key can ever spend is answered COST_EXCEEDS_ALLOWANCE, every time, with nothing spent', async () => {
    // 1 point a second and a burst of 5: a page of 50 is 1 + 5 = 6 points.
    const partner = await limitedPartner(1);
    for (let i = 0; i < 3; i += 1) {
      const answer = await server.gql(partner.apiKey, page(50));
      expect(answer.status).toBe(400);
      expect(answer.headers.get('retry-after')).toBeNull();
      expect(codes(answer.body.errors)).toEqual(['COST_EXCEEDS_ALLOWANCE']);
      expect(answer.body.errors![0]!.extensions).toMatchObject({ points: 6, allowance: 5 });
      expect(answer.body.errors![0]!.message).toMatch(/never run for this key/);
      expect(answer.body.data).toBeUndefined();
    }
    // The refusals spent nothing: a page of 40 (5 points) runs at once.
    expect((await server.gql(partner.apiKey, page(40))).status).toBe(200);
    // Then it is the rate limit that answers, with a wait.
    const limited = await server.gql(partner.apiKey, page(40));
    expect(limited.status).toBe(429);
    expect(codes(limited.body.errors)).toEqual(['RATE_LIMITED']);
  });

  test('the allowance follows the key: a higher rate runs the same page', async () => {
    const partner = await limitedPartner(2);
    // Rate 2: a burst of 10 points, so the page of 50 (6 points) fits.
    expect((await server.gql(partner.apiKey, page(50))).status).toBe(200);
    expect((await server.gql(partner.apiKey, page(100))).body.errors![0]!.extensions).toMatchObject({ code: 'COST_EXCEEDS_ALLOWANCE', points: 11, allowance: 10 });
  });

  test("an operator key's allowance is the server's default budget; the admin key has none", async () => {
    const limited = await startTestServer({ config: { env: 'production', rateLimit: { pointsPerSecond: 3, burstPoints: 0, authFailuresPerMinute: 1000 } } });
    try {
      const made = await limited.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "dashboard", role: VIEWER }) { apiKey } }');
      const key = made.body.data!.createOperatorKey.apiKey as string;
      const answer = await limited.gql(key, page(30));
      expect(answer.status).toBe(400);
      expect(answer.body.errors![0]!.extensions).toMatchObject({ code: 'COST_EXCEEDS_ALLOWANCE', points: 4, allowance: 3 });
      expect((await limited.gql(key, page(20))).status).toBe(200);
      expect((await limited.gql(ADMIN_KEY, page(100))).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});
