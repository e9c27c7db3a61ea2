// `npm run db:migrate`: apply pending migrations to DATABASE_URL (npm start does this by itself).
import 'dotenv/config';
import { migrate } from '../src/db/migrate';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('DATABASE_URL is not set. (npm start migrates the embedded database by itself.)\n');
  process.exit(1);
}
migrate(url)
  .then((applied) => process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n'))
  .catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
