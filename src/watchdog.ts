// A shutdown that always ends. When a shutdown begins, a watchdog thread is armed: past its deadline
// it SIGKILLs this process, whatever the main thread is doing — busy, blocked in a system call, or
// stuck in an exit handler (a timer on the main thread's event loop cannot fire then). It runs in a
// worker thread with its own event loop, and is unref'd: a shutdown that finishes in time is never
// held up by it.
import { Worker } from 'node:worker_threads';

const WATCHDOG = `
const { workerData } = require('node:worker_threads');
setTimeout(() => process.kill(workerData.pid, 'SIGKILL'), workerData.ms);
`;

/** Kills this process `ms` from now unless it has exited by then. */
export function armShutdownWatchdog(ms: number): void {
  // execArgv [] : not the parent's --import tsx, which would load a TypeScript loader into it.
  const worker = new Worker(WATCHDOG, { eval: true, workerData: { pid: process.pid, ms }, execArgv: [], stdout: true, stderr: true });
  worker.unref();
}
