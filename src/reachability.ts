// Whether the database answers, as the background work and the health checks see it — logged once per
// change of state, not once per tick: a server whose database went away says so once ("database
// unreachable", with the first error), and once more when it answers again, rather than a warning
// from the sweeper every second and from every health check.
import { isTransientDbError } from './db/pgErrors';
import type { Logger } from './logger';

export class Reachability {
  private down: { since: number } | null = null;

  constructor(private readonly logger: Logger) {}

  /**
   * `who` failed with `error`. A database that cannot be reached (a transient error: connection
   * refused or lost, no connection within the timeout, a server starting up) changes the state; any
   * other error is `who`'s own, and logged by it.
   */
  failed(error: unknown, who: string): boolean {
    if (!isTransientDbError(error)) return false;
    if (!this.down) {
      this.down = { since: Date.now() };
      this.logger.warn({ error: (error as Error).message, who }, 'database unreachable; logged once, until it answers again');
    }
    return true;
  }

  /** Something the database was asked answered. */
  answered(): void {
    if (!this.down) return;
    this.logger.info({ downMs: Date.now() - this.down.since }, 'database reachable again');
    this.down = null;
  }
}
