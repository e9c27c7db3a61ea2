// The soak's HTTP client: one keep-alive agent, as many sockets as connections, one request at a time
// each; every answer timed and counted in its window.
import http from 'node:http';
import { windowAt } from './windows';
import { CONNECTIONS, REQUEST_TIMEOUT_MS, type Op } from './settings';

export const Q = {
  claim: 'mutation Claim($input: ClaimTicketInput!) { claimTicket(input: $input) { allocation { id status ticket { code } } error { code } } }',
  hold: 'mutation Hold($input: HoldTicketInput!) { holdTicket(input: $input) { allocation { id status ticket { code } } error { code } } }',
  confirm: 'mutation Confirm($id: ID!) { confirmHold(allocationId: $id) { allocation { id status } error { code } } }',
  release: 'mutation Release($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }',
  stats: 'query Stats($id: ID!) { campaign(id: $id) { stats { total allocated held available } } }',
  read: 'query Allocation($id: ID!) { allocation(id: $id) { id status ticket { code } } }',
};
export const FIELD: Record<Op, string> = { claim: 'claimTicket', hold: 'holdTicket', confirm: 'confirmHold', release: 'releaseAllocation', stats: 'campaign', read: 'allocation' };

export interface Answer {
  /** null: the operation succeeded. */
  code: string | null;
  /** The outcome is unknown (transport failure, 5xx, a GraphQL error on a mutation). */
  unknown: boolean;
  payload: any;
}

export function makeClient(url: string) {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS, maxFreeSockets: CONNECTIONS });
  const post = (key: string, body: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
          res.on('error', reject);
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
      req.on('error', reject);
      req.end(body);
    });

  async function call(op: Op, key: string, variables: Record<string, unknown>): Promise<Answer> {
    const started = performance.now();
    let answer: Answer;
    try {
      const { status, text } = await post(key, JSON.stringify({ query: Q[op], variables }));
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      if (body?.errors?.length) {
        answer = { code: String(body.errors[0]?.extensions?.code ?? 'GRAPHQL_ERROR'), unknown: true, payload: null };
      } else if (status !== 200 || !body?.data) {
        answer = { code: `HTTP_${status}`, unknown: true, payload: null };
      } else {
        const payload = body.data[FIELD[op]];
        answer = payload?.error ? { code: String(payload.error.code), unknown: false, payload } : { code: null, unknown: false, payload };
      }
    } catch (error) {
      answer = { code: `NETWORK_${(error as { code?: string }).code ?? 'ERROR'}`, unknown: true, payload: null };
    }
    const done = performance.now();
    const w = windowAt(done);
    w.requests += 1;
    w.latencies.push(done - started);
    if (op === 'claim') {
      w.claimLatencies.push(done - started);
      if (answer.code === null) w.claims += 1;
    }
    if (answer.code !== null) w.codes.set(answer.code, (w.codes.get(answer.code) ?? 0) + 1);
    return answer;
  }
  return { call, close: () => agent.destroy() };
}
