// The log's own guarantees: secrets censored wherever the redaction promises, objects never changed,
// and the lines of one turn of the event loop written to stdout together.
import { createLogger, drainStdout, redactSecrets } from '../src/logger';

test('authorization, apiKey and adminApiKey are censored at the top, one level down, and in req.headers', () => {
  const error = Object.assign(new Error('boom'), { authorization: 'Bearer tsp_secret' });
  const line = {
    authorization: 'Bearer a',
    apiKey: 'tsp_b',
    adminApiKey: 'c',
    params: { Authorization: 'kept: another spelling', authorization: 'Bearer d', apiKey: 'e', other: 1 },
    req: { headers: { authorization: 'Bearer f', host: 'h' }, url: '/graphql' },
    err: error,
    list: [{ apiKey: 'two levels down: out of reach, as with pino redact' }],
    requestId: 'r1',
  };
  const before = JSON.stringify(line);
  const out = redactSecrets(line) as typeof line;
  expect(out).toMatchObject({
    authorization: '[redacted]',
    apiKey: '[redacted]',
    adminApiKey: '[redacted]',
    params: { Authorization: 'kept: another spelling', authorization: '[redacted]', apiKey: '[redacted]', other: 1 },
    req: { headers: { authorization: '[redacted]', host: 'h' }, url: '/graphql' },
    requestId: 'r1',
  });
  // An Error stays an Error, with its message and stack, for pino's serializer.
  expect(out.err).toBeInstanceOf(Error);
  expect([out.err.message, out.err.stack, (out.err as unknown as { authorization: string }).authorization]).toEqual(['boom', error.stack, '[redacted]']);
  // Nothing logged is changed; a line without secrets is not copied.
  expect(JSON.stringify(line)).toBe(before);
  const clean = { transport: 'http', requestId: 'r2', status: 200, nested: { ms: 1 } };
  expect(redactSecrets(clean)).toBe(clean);
});

test("the lines of one turn go to stdout in one write, censored, and drainStdout writes what waits", async () => {
  const writes: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    writes.push(String(chunk));
    return true;
  });
  try {
    const logger = createLogger({ env: 'production', level: 'info' });
    logger.info({ authorization: 'Bearer secret', requestId: 'a' }, 'first');
    logger.info({ requestId: 'b' }, 'second');
    logger.warn({ req: { headers: { authorization: 'Bearer secret' } } }, 'third');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toHaveLength(1);
    const lines = writes[0]!.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.msg)).toEqual(['first', 'second', 'third']);
    expect(writes[0]).not.toContain('secret');
    expect(lines[0]!.authorization).toBe('[redacted]');
    logger.info('fourth');
    await drainStdout(10);
    expect(writes).toHaveLength(2);
    expect(JSON.parse(writes[1]!).msg).toBe('fourth');
  } finally {
    spy.mockRestore();
  }
});
