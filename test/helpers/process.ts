// Tessera as operators run it: `node --import tsx src/main.ts` in a child process, for the tests of
// start-up, shutdown and several instances on one database.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { ADMIN_KEY } from './testServer';

export { accepts } from '../../src/db/embedded';

export const ROOT = path.resolve(__dirname, '../..');

export interface TesseraProcess {
  child: ChildProcess;
  port: number;
  /** Resolves with the exit code once the process has exited and its output has been read. */
  exited: Promise<number | null>;
  /** Everything it printed so far (pino's JSON lines and the banner). */
  output(): string;
}

/**
 * Starts `npm start`'s entry point and resolves once it logs that it serves (its port read from that
 * line, so PORT=0 works); rejects if it exits first. `databaseUrl` null: no DATABASE_URL at all.
 */
export function startProcess(databaseUrl: string | null, extraEnv: Record<string, string> = {}): Promise<TesseraProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, ADMIN_API_KEY: ADMIN_KEY, PORT: '0', NODE_ENV: 'development', LOG_LEVEL: 'info', ...extraEnv };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  // 'close', not 'exit': by then everything it printed has been read (its last log lines too).
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"port":(\d+),"ms"/.exec(output);
      if (match) resolve({ child, port: Number(match[1]), exited, output: () => output });
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`server exited with ${code} before it was ready:\n${output}`)));
  });
}

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs `npm start`'s entry point expecting it to fail: resolves with its exit code and everything it
 * printed. `databaseUrl` null: no DATABASE_URL at all. Killed after `timeoutMs` (a hang fails).
 */
export function runToExit(
  databaseUrl: string | null,
  extraEnv: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, ADMIN_API_KEY: ADMIN_KEY, PORT: '0', NODE_ENV: 'development', LOG_LEVEL: 'info', ...extraEnv };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}
