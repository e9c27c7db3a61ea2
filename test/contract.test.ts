// The public contract (contract/): every operation partners and checkers send must validate against
// our SDL, and every contract field keeps its type.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { buildSchema, parse, validate } from 'graphql';

const schema = buildSchema(readFileSync(path.resolve(__dirname, '../schema.graphql'), 'utf8'));
const contractDir = path.resolve(__dirname, '../contract');
const opsDir = path.join(contractDir, 'ops');

test('every operation in the contract ops/core.graphql validates against schema.graphql', () => {
  const document = parse(readFileSync(path.join(opsDir, 'core.graphql'), 'utf8'));
  expect(document.definitions.length).toBeGreaterThan(10);
  expect(validate(schema, document).map((e) => e.message)).toEqual([]);
});

test('every enum value and field of the contract that schema.graphql declares is kept with the same type', () => {
  const contract = buildSchema(readFileSync(path.join(contractDir, 'schema.graphql'), 'utf8'));
  const ours = schema.getTypeMap();
  for (const [name, type] of Object.entries(contract.getTypeMap())) {
    if (name.startsWith('__') || !ours[name]) continue;
    const mine = ours[name]!;
    if ('getValues' in type && 'getValues' in mine) {
      const values = (mine as unknown as { getValues(): readonly { name: string }[] }).getValues().map((v) => v.name);
      for (const v of (type as unknown as { getValues(): readonly { name: string }[] }).getValues()) expect(values).toContain(v.name);
    }
    if ('getFields' in type && 'getFields' in mine) {
      const fields = (mine as { getFields(): Record<string, { type: unknown }> }).getFields();
      for (const [field, def] of Object.entries((type as { getFields(): Record<string, { type: unknown }> }).getFields())) {
        if (fields[field]) expect(`${name}.${field}: ${String(fields[field]!.type)}`).toBe(`${name}.${field}: ${String(def.type)}`);
      }
    }
  }
});

test.each(['reservations.graphql', 'live.graphql'])('every operation in the contract ops/%s validates against schema.graphql', (file) => {
  const document = parse(readFileSync(path.join(opsDir, file), 'utf8'));
  expect(validate(schema, document).map((e) => e.message)).toEqual([]);
});

test('every contract operation file is checked', () => {
  expect(readdirSync(opsDir).sort()).toEqual(['core.graphql', 'live.graphql', 'reservations.graphql']);
});

test('the contract of the next features builds on top of the contract schema', () => {
  const sdl = [readFileSync(path.join(contractDir, 'schema.graphql'), 'utf8'), readFileSync(path.join(contractDir, 'next.graphql'), 'utf8')].join('\n');
  expect(() => buildSchema(sdl)).not.toThrow();
});

test("every field of the next features' contract that schema.graphql already has, it has as the contract says: its arguments, and its type", () => {
  const sdl = [readFileSync(path.join(contractDir, 'schema.graphql'), 'utf8'), readFileSync(path.join(contractDir, 'next.graphql'), 'utf8')].join('\n');
  const next = buildSchema(sdl);
  const ours = schema.getTypeMap();
  type Field = { args?: readonly { name: string; type: unknown }[]; type: unknown };
  const fieldsOf = (t: unknown): Record<string, Field> | null =>
    t && typeof t === 'object' && 'getFields' in t ? (t as { getFields(): Record<string, Field> }).getFields() : null;
  let compared = 0;
  for (const [name, type] of Object.entries(next.getTypeMap())) {
    if (name.startsWith('__') || !ours[name]) continue;
    const theirs = fieldsOf(type);
    const mine = fieldsOf(ours[name]);
    if (!theirs || !mine) continue;
    for (const [field, def] of Object.entries(theirs)) {
      const own = mine[field];
      if (!own) continue; // a feature not built yet
      compared += 1;
      expect(`${name}.${field}: ${String(own.type)}`).toBe(`${name}.${field}: ${String(def.type)}`);
      // Every argument the contract names, with its type (ours may add optional ones).
      for (const arg of def.args ?? []) {
        expect(`${name}.${field}(${arg.name}: ${String(own.args?.find((a) => a.name === arg.name)?.type)})`).toBe(`${name}.${field}(${arg.name}: ${String(arg.type)})`);
      }
    }
  }
  expect(compared).toBeGreaterThan(50);
});

/** The names a block of next.graphql declares, each found in our schema or reported MISSING. */
function blockNames(from: string, to: string, shared: Record<string, string[]>, skip: string[] = []): string[] {
  const next = readFileSync(path.join(contractDir, 'next.graphql'), 'utf8');
  const start = next.indexOf(from);
  const end = next.indexOf(to);
  expect(start).toBeGreaterThan(0);
  expect(end).toBeGreaterThan(start);
  const block = parse(next.slice(start, end));
  const ours = schema.getTypeMap();
  const names: string[] = [];
  const has = (type: string, member: string) => {
    const t = ours[type] as unknown as { getFields?(): Record<string, unknown>; getValues?(): readonly { name: string }[] } | undefined;
    if (!t) return false;
    if (t.getValues) return t.getValues().some((v) => v.name === member);
    return Boolean(t.getFields?.()[member]);
  };
  for (const def of block.definitions) {
    if (!('name' in def) || !def.name) continue;
    const type = def.name.value;
    const members = [
      ...('fields' in def && def.fields ? def.fields.map((f) => f.name.value) : []),
      ...('values' in def && def.values ? def.values.map((v) => v.name.value) : []),
    ];
    if (members.length === 0) names.push(ours[type] ? type : `MISSING ${type}`);
    for (const member of members.filter((m) => !skip.includes(m))) names.push(has(type, member) ? `${type}.${member}` : `MISSING ${type}.${member}`);
  }
  // The block's additions to the shared types, declared together at the end of the file.
  for (const [type, members] of Object.entries(shared)) for (const m of members) names.push(has(type, m) ? `${type}.${m}` : `MISSING ${type}.${m}`);
  return names;
}

test('every name of the contract\'s "Allotments, waitlists, hold extension, release policy" block is in schema.graphql', () => {
  const names = blockNames(
    '# Allotments, waitlists, hold extension, release policy',
    '# Ballot drops',
    {
      Campaign: ['releasePolicy', 'waitlistOfferSeconds', 'maxHoldSeconds', 'allotments', 'waitlist', 'waitlistLength'],
      CreateCampaignInput: ['releasePolicy', 'waitlistOfferSeconds', 'maxHoldSeconds'],
      CampaignStats: ['allotted', 'void'],
      TicketStatus: ['VOID'],
      Query: ['waitlistEntry'],
      Mutation: ['setPartnerAllotment', 'extendHold', 'joinWaitlist', 'leaveWaitlist'],
    },
    // ENTRIES_CLOSED sits in this block's enum extension but is enterBallot's (the ballot block).
    ['ENTRIES_CLOSED'],
  );
  expect(names.length).toBeGreaterThan(40);
  expect(names.filter((n) => n.startsWith('MISSING'))).toEqual([]);
});

test('every name of the contract\'s "Ballot drops" block is in schema.graphql', () => {
  const names = blockNames('# Ballot drops', '# Operator roles', {
    Campaign: ['mode', 'ballot', 'ballotEntries', 'entriesCloseAt', 'ballotConfirmSeconds'],
    CreateCampaignInput: ['mode', 'entriesCloseAt', 'ballotConfirmSeconds'],
    ClaimErrorCode: ['ALREADY_ENTERED', 'ENTRIES_CLOSED'],
    WebhookEvent: ['BALLOT_DRAWN'],
    Query: ['ballotEntry'],
    Mutation: ['enterBallot', 'withdrawBallotEntry', 'drawBallot'],
  });
  expect(names.length).toBeGreaterThan(35);
  expect(names.filter((n) => n.startsWith('MISSING'))).toEqual([]);
});
