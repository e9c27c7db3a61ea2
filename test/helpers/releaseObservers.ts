// Run after each test file's set-up (jest.config.js setupFilesAfterEnv): disconnects, once the
// file is done, every PerformanceObserver the file started. prom-client's default metrics, which
// every server's registry collects (src/metrics.ts), observe garbage collections with one that is
// never disconnected; node:perf_hooks is the process's own, so the observer outlived its file and
// kept the server's registry — and through its gauges the pool, the Prisma client and that file's
// copy of every module — alive in the Jest worker: about 14 MB a server, measured with
// `node --expose-gc jest -i --logHeapUsage` over files that start and stop one server each
// (87, 101, 115 MB heap after the second, third and fourth file; 85, 95, 95 MB with this).
import { PerformanceObserver } from 'node:perf_hooks';

const started: PerformanceObserver[] = [];
const observe = PerformanceObserver.prototype.observe;

PerformanceObserver.prototype.observe = function (this: PerformanceObserver, ...args: Parameters<PerformanceObserver['observe']>): void {
  started.push(this);
  observe.apply(this, args);
};

afterAll(() => {
  for (const observer of started.splice(0)) observer.disconnect();
  PerformanceObserver.prototype.observe = observe;
});
