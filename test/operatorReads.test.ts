// @dialects postgresql citus
// The reads the console is built on (issue 18): refused claims per bucket in Campaign.timeline, and
// a campaign's allocations searched by holder or by ticket code.
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ config: { refusalFlushMs: 100, holdSweepIntervalMs: 0 } });
});
afterAll(() => server.stop());

const TIMELINE = 'query($id: ID!, $b: TimeBucket!) { campaign(id: $id) { timeline(bucket: $b) { at allocated cumulative refused refusals { code count } } } }';
type Point = { at: string; allocated: number; cumulative: number; refused: number; refusals: { code: string; count: number }[] };
const timeline = async (id: string, bucket = 'MINUTE'): Promise<Point[]> => (await server.gql(ADMIN_KEY, TIMELINE, { id, b: bucket })).body.data!.campaign.timeline;
const total = (points: Point[]) => points.reduce((n, p) => n + p.refused, 0);

describe('Campaign.timeline counts refused claims', () => {
  test('sold out, holder limit and quota refusals are counted by code, from several claims at once; nothing else is', async () => {
    const partner = await server.createPartner('refused');
    const id = await server.openCampaignWith(3, { perHolderLimit: 1 });
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId: id, holder: `h${i}` } })),
    );
    const outcomes = claims.map((c) => c.body.data!.claimTicket.error?.code ?? 'ALLOCATED');
    expect(outcomes.filter((o) => o === 'ALLOCATED')).toHaveLength(3);
    // h0 claimed already (or was refused as sold out): either way a second claim is refused.
    const again = await server.gql(partner.apiKey, CLAIM, { input: { campaignId: id, holder: 'h0' } });
    const refusedCodes = [...outcomes.filter((o) => o !== 'ALLOCATED'), again.body.data!.claimTicket.error.code];
    // Not counted: an unknown campaign, and a request refused before any campaign was looked at.
    await server.gql(partner.apiKey, CLAIM, { input: { campaignId: '00000000-0000-0000-0000-0000000000ee', holder: 'x' } });
    await server.gql(partner.apiKey, CLAIM, { input: { campaignId: id, holder: '' } });

    await until(async () => total(await timeline(id)) === refusedCodes.length, { message: `${refusedCodes.length} refusals in the timeline` });
    const points = await timeline(id);
    const byCode = new Map<string, number>();
    for (const code of refusedCodes) byCode.set(code, (byCode.get(code) ?? 0) + 1);
    const counted = new Map<string, number>();
    for (const p of points) for (const r of p.refusals) counted.set(r.code, (counted.get(r.code) ?? 0) + r.count);
    expect(counted).toEqual(byCode);
    expect(points.reduce((n, p) => n + p.allocated, 0)).toBe(3);
    expect(points.at(-1)!.cumulative).toBe(3);
    for (const p of points) expect(p.refused).toBe(p.refusals.reduce((n, r) => n + r.count, 0));
    // The same figures by hour and by day.
    expect(total(await timeline(id, 'HOUR'))).toBe(refusedCodes.length);
    expect(total(await timeline(id, 'DAY'))).toBe(refusedCodes.length);
  });

  test('a campaign with refusals and no allocation has points with refused and allocated 0', async () => {
    const partner = await server.createPartner('closed door');
    const id = await server.createCampaign();
    await server.loadTickets(id, 2);
    // DRAFT: every claim is CAMPAIGN_NOT_OPEN.
    await Promise.all([1, 2].map((i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId: id, holder: `d${i}` } })));
    await until(async () => total(await timeline(id)) === 2, { message: 'two refusals' });
    expect(await timeline(id)).toEqual([{ at: expect.any(String), allocated: 0, cumulative: 0, refused: 2, refusals: [{ code: 'CAMPAIGN_NOT_OPEN', count: 2 }] }]);
  });
});

describe('Campaign.allocations searched by holder or code', () => {
  const SEARCH = `query($id: ID!, $holder: String, $code: String, $first: Int) {
    campaign(id: $id) { allocations(first: $first, holder: $holder, code: $code, order: NEWEST_FIRST) { totalCount edges { node { holder status ticket { code } partner { name } } } pageInfo { hasNextPage } } }
  }`;
  let id: string;
  let mine: { id: string; apiKey: string };
  let theirs: { id: string; apiKey: string };
  beforeAll(async () => {
    id = await server.openCampaignWith(10);
    mine = await server.createPartner('mine');
    theirs = await server.createPartner('theirs');
    for (const [p, holder] of [[mine, 'alice'], [mine, 'alice'], [mine, 'bob'], [theirs, 'alice']] as const) {
      const r = await server.gql(p.apiKey, CLAIM, { input: { campaignId: id, holder } });
      expect(r.body.data!.claimTicket.error).toBeNull();
    }
  });

  test('by holder: every allocation of that holder, released ones too, with the count', async () => {
    const first = (await server.gql(ADMIN_KEY, SEARCH, { id, holder: 'alice', first: 1 })).body.data!.campaign.allocations;
    expect(first.totalCount).toBe(3);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const all = (await server.gql(ADMIN_KEY, SEARCH, { id, holder: 'alice' })).body.data!.campaign.allocations;
    expect(all.edges.map((e: { node: { holder: string } }) => e.node.holder)).toEqual(['alice', 'alice', 'alice']);
    expect((await server.gql(ADMIN_KEY, SEARCH, { id, holder: 'nobody' })).body.data!.campaign.allocations).toMatchObject({ totalCount: 0, edges: [] });
  });

  test('by code: the allocation of that ticket; a code that does not exist finds nothing', async () => {
    const some = (await server.gql(ADMIN_KEY, SEARCH, { id, holder: 'bob' })).body.data!.campaign.allocations.edges[0].node;
    const found = (await server.gql(ADMIN_KEY, SEARCH, { id, code: some.ticket.code })).body.data!.campaign.allocations;
    expect(found.totalCount).toBe(1);
    expect(found.edges[0].node).toMatchObject({ holder: 'bob', ticket: { code: some.ticket.code } });
    expect((await server.gql(ADMIN_KEY, SEARCH, { id, code: 'NO-SUCH-CODE' })).body.data!.campaign.allocations.totalCount).toBe(0);
    expect((await server.gql(ADMIN_KEY, SEARCH, { id, code: some.ticket.code, holder: 'alice' })).body.data!.campaign.allocations.totalCount).toBe(0);
  });

  test('a partner searching finds only its own', async () => {
    const r = (await server.gql(theirs.apiKey, SEARCH, { id, holder: 'alice' })).body.data!.campaign.allocations;
    expect(r.totalCount).toBe(1);
    expect(r.edges[0].node.partner.name).toBe('theirs');
  });

  test('a holder longer than a holder can be is BAD_USER_INPUT', async () => {
    const r = await server.gql(ADMIN_KEY, SEARCH, { id, holder: 'h'.repeat(300) });
    expect(r.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'holder' });
  });
});
