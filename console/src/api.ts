// The console speaks only the public GraphQL API: POST /graphql with the admin key, and the
// campaignStats subscription over graphql-ws on the same path.
import { createClient, type Client } from 'graphql-ws';

const KEY = 'tessera-admin-key';

export const session = {
  get key(): string | null {
    return sessionStorage.getItem(KEY);
  },
  set key(value: string | null) {
    if (value === null) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, value);
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

export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${session.key ?? ''}` },
    body: JSON.stringify({ query, variables }),
  });
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
    });
  }
  return ws;
}

export function signOut(): void {
  session.key = null;
  void ws?.dispose();
  ws = null;
}
