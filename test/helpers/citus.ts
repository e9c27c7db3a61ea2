// A Citus cluster for `npm run test:citus` (CITUS_URL: its coordinator, as .ci/run starts it). Citus
// keeps its metadata per database, on every node, so a test database is one database of the same
// name on the coordinator and on each worker: the template is made on all of them (the extension,
// the workers registered, then migrated — which distributes every table, src/db/distribute.ts),
// and each test file's database is a clone of it made on every node at once. The shard placements
// name nodes by host and port, never by database, so the clones agree with each other.
import { databaseUrl, withClient } from './env';

export const CITUS_ENV = 'CITUS_URL';
/** Set by globalSetupCitus: the URLs (database `postgres`) of the coordinator, then each worker. */
export const CITUS_NODES_ENV = 'TESSERA_TEST_CITUS_NODES';

export function citusNodes(): string[] | null {
  const nodes = process.env[CITUS_NODES_ENV];
  return nodes ? (JSON.parse(nodes) as string[]) : null;
}

/** The coordinator and its active workers, or the reason the cluster cannot be used. */
export async function findCitus(coordinatorUrl: string | undefined): Promise<{ nodes: string[] } | { skip: string }> {
  if (!coordinatorUrl) return { skip: `${CITUS_ENV} is not set (start a cluster: docs/SCALING.md, "Citus")` };
  try {
    const workers = await withClient(databaseUrl(coordinatorUrl, 'postgres'), async (c) => {
      await c.query("SET statement_timeout = '5s'");
      const { rows } = await c.query<{ node_name: string; node_port: number }>('SELECT node_name, node_port FROM citus_get_active_worker_nodes() ORDER BY node_port');
      return rows;
    });
    if (workers.length === 0) return { skip: `the Citus coordinator at ${CITUS_ENV} has no active worker` };
    const nodes = [databaseUrl(coordinatorUrl, 'postgres')];
    for (const w of workers) {
      const url = new URL(coordinatorUrl);
      url.hostname = w.node_name;
      url.port = String(w.node_port);
      nodes.push(databaseUrl(url.toString(), 'postgres'));
    }
    return { nodes };
  } catch (error) {
    return { skip: `the Citus coordinator at ${CITUS_ENV} does not answer as Citus: ${(error as Error).message}` };
  }
}

/** An empty database `name` with Citus on every node, the workers registered on the coordinator. */
export async function createCitusDatabase(nodes: readonly string[], name: string): Promise<void> {
  for (const node of nodes) {
    await withClient(node, async (c) => {
      await c.query('SET client_min_messages = warning');
      await c.query(`CREATE DATABASE "${name}"`);
    });
    await withClient(databaseUrl(node, name), (c) => c.query('SET client_min_messages = warning; CREATE EXTENSION citus'));
  }
  const coordinator = new URL(nodes[0]!);
  await withClient(databaseUrl(nodes[0]!, name), async (c) => {
    await c.query('SELECT citus_set_coordinator_host($1, $2)', [coordinator.hostname, Number(coordinator.port || 5432)]);
    for (const node of nodes.slice(1)) {
      const url = new URL(node);
      await c.query('SELECT citus_add_node($1, $2)', [url.hostname, Number(url.port || 5432)]);
    }
  });
}

/** Closes `name` to connections on every node (a template must have none) and ends those it has. */
export async function sealTemplate(nodes: readonly string[], name: string): Promise<void> {
  for (const node of nodes) {
    await withClient(node, async (c) => {
      await c.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    });
  }
}

/** `name` cloned from `template` on every node. */
export async function cloneCitusDatabase(nodes: readonly string[], template: string, name: string): Promise<void> {
  for (const node of nodes) {
    await withClient(node, async (c) => {
      await c.query('SET client_min_messages = warning');
      await c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    });
  }
}

export async function dropCitusDatabase(nodes: readonly string[], name: string): Promise<void> {
  // Workers first: the coordinator's maintenance daemon holds connections to them.
  for (const node of [...nodes].reverse()) {
    await withClient(node, async (c) => {
      await c.query('SET client_min_messages = warning');
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    });
  }
}
