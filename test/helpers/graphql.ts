// GraphQL over HTTP, as a partner's system sends it: one POST with `Authorization: Bearer <key>`.
// Free of Jest and of the server's code: the tests of processes (test/helpers/process.ts), the
// cluster tests and test/chaos/ use it as they use a server in-process.

/** The admin key every test server and test process is started with. */
export const ADMIN_KEY = 'test-admin-key-0123456789';

export interface GraphQLResponse<T = Record<string, any>> {
  status: number;
  headers: Headers;
  body: { data?: T | null; errors?: { message: string; path?: string[]; extensions?: Record<string, any> }[] };
}

export interface PostOptions {
  /** Abort after this long (a connection that reaches a dying process may never be answered). */
  timeoutMs?: number;
}

/** One GraphQL request to `url`; `key` null sends no Authorization header. Rejects on a network error or timeout. */
export async function postGraphQL<T = Record<string, any>>(
  url: string,
  key: string | null,
  query: string,
  variables?: unknown,
  options: PostOptions = {},
): Promise<GraphQLResponse<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables }),
    signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResponse<T>['body'] };
}

/** A request that must succeed (set-up steps): its data; throws on any GraphQL error. */
export async function graphqlData<T = Record<string, any>>(url: string, key: string, query: string, variables?: unknown, options: PostOptions = {}): Promise<T> {
  const res = await postGraphQL<T>(url, key, query, variables, options);
  if (res.body.errors?.length || !res.body.data) throw new Error(`GraphQL failed (${res.status}): ${JSON.stringify(res.body)}`);
  return res.body.data;
}
