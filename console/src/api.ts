// The console speaks only the public GraphQL API: POST /graphql with the operator's key, and the
// campaignStats subscription over graphql-ws on the same path. It remembers, for this tab only, the
// key and the role `viewer` answered for it, and tells the header's live indicator whether the
// server answers.
import { createClient, type Client } from 'graphql-ws';

const KEY = 'tessera-admin-key';
const ROLE = 'tessera-role';
const TEST_MODE = 'tessera-test-mode';
export type Role = 'OWNER' | 'OPERATOR' | 'VIEWER';

export const session = {
  get key(): string | null {
    return sessionStorage.getItem(KEY);
  },
  set key(value: string | null) {
    if (value === null) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, value);
  },
  get role(): Role | null {
    return sessionStorage.getItem(ROLE) as Role | null;
  },
  set role(value: Role | null) {
    if (value === null) sessionStorage.removeItem(ROLE);
    else sessionStorage.setItem(ROLE, value);
  },
  /** The Test mode switch (issue 31): the console shows test campaigns and their figures. */
  get testMode(): boolean {
    return sessionStorage.getItem(TEST_MODE) === '1';
  },
  set testMode(value: boolean) {
    if (value) sessionStorage.setItem(TEST_MODE, '1');
    else sessionStorage.removeItem(TEST_MODE);
  },
};

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The connection as the header shows it: the last request or socket event decides. */
export type Liveness = 'live' | 'connecting' | 'offline';
const listeners = new Set<(state: Liveness) => void>();
let liveness: Liveness = 'connecting';
function setLiveness(state: Liveness): void {
  if (state === liveness) return;
  liveness = state;
  for (const listener of listeners) listener(state);
}
export function onLiveness(listener: (state: Liveness) => void): () => void {
  listeners.add(listener);
  listener(liveness);
  return () => listeners.delete(listener);
}

export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session.key ?? ''}` },
      body: JSON.stringify({ query, variables }),
    });
  } catch (error) {
    setLiveness('offline');
    throw error;
  }
  setLiveness(res.status >= 500 ? 'offline' : 'live');
  const body = (await res.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
  if (body.errors?.length) {
    const first = body.errors[0]!;
    throw new ApiError(first.message, first.extensions?.code ?? 'ERROR');
  }
  return body.data as T;
}

let ws: Client | null = null;

export function subscription(): Client {
  if (!ws) {
    ws = createClient({
      url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
      connectionParams: () => ({ Authorization: `Bearer ${session.key ?? ''}` }),
      lazy: true,
      retryAttempts: 5,
      on: {
        connecting: () => setLiveness('connecting'),
        connected: () => setLiveness('live'),
        closed: (event) => {
          // 1000: closed because nothing is subscribed any more; anything else is a lost connection.
          if ((event as { code?: number }).code !== 1000) setLiveness('offline');
        },
      },
    });
  }
  return ws;
}

export function signOut(): void {
  session.key = null;
  session.role = null;
  session.testMode = false;
  void ws?.dispose();
  ws = null;
}
