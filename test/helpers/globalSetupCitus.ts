// Once per `npm run test:citus`: a migrated, distributed template database on the Citus cluster at
// CITUS_URL (test/helpers/citus.ts), which every test file clones on every node. Without a cluster
// nothing is made: jest.citus.config.js then runs only test/citus/cluster.citus.ts, which reports
// the skip.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { migrate } from '../../src/db/migrate';
import { CITUS_ENV, CITUS_NODES_ENV, createCitusDatabase, findCitus, sealTemplate } from './citus';
import { databaseUrl, RUN_ENV, SERVER_ENV, TEMPLATE_ENV } from './env';

export const CITUS_SKIP_ENV = 'TESSERA_TEST_CITUS_SKIP';

export default async function globalSetupCitus(): Promise<void> {
  mkdirSync(path.resolve(__dirname, '../../test-results'), { recursive: true });
  const found = await findCitus(process.env[CITUS_ENV]);
  if ('skip' in found) {
    process.env[CITUS_SKIP_ENV] = found.skip;
    return;
  }
  const run = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const template = `tessera_test_${run}_template`;
  await createCitusDatabase(found.nodes, template);
  await migrate(databaseUrl(found.nodes[0]!, template));
  await sealTemplate(found.nodes, template);
  process.env[SERVER_ENV] = found.nodes[0]!;
  process.env[TEMPLATE_ENV] = template;
  process.env[RUN_ENV] = run;
  process.env[CITUS_NODES_ENV] = JSON.stringify(found.nodes);
}
