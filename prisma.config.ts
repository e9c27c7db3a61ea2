// Prisma CLI configuration. DATABASE_URL is read directly (not with Prisma's env()), because env()
// throws when the variable is unset and `prisma generate` must work without a database.
// DATABASE_DIRECT_URL first, as Prisma's `directUrl` was: behind PgBouncer (DATABASE_POOLER=pgbouncer)
// the CLI's migrate commands need PostgreSQL itself, for their session advisory lock.
import 'dotenv/config';
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL || '' },
});
