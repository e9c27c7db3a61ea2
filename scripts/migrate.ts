// `npm run db:migrate`: apply pending migrations to DATABASE_DIRECT_URL, else DATABASE_URL (npm start
// does this by itself). Behind PgBouncer DATABASE_URL will not do: the migration lock is a session lock.
import 'dotenv/config';
import { migrate } from '../src/db/migrate';

const url = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('DATABASE_URL is not set. (npm start migrates the embedded database by itself.)\n');
  process.exit(1);
}
if (!process.env.DATABASE_DIRECT_URL && process.env.DATABASE_POOLER === 'pgbouncer') {
  process.stderr.write('DATABASE_POOLER=pgbouncer: set DATABASE_DIRECT_URL to PostgreSQL itself; migrations cannot run through a transaction pooler.\n');
  process.exit(1);
}
migrate(url)
  .then((applied) => process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n'))
  .catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
