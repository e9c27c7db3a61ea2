// A webhook receiver that misbehaves (scenario g of npm run chaos): each request is answered at
// random — slowly, with 500, never (the sender's 10 s deadline ends it), or by hanging up — until
// `heal()`; every arrival is recorded with its event id, whatever the answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Misbehaviour {
  slow: number;
  error: number;
  hang: number;
  hangUp: number;
}

export class FaultyReceiver {
  /** Every arrival: the event id and the body's type and allocation. */
  readonly arrivals: { eventId: string; type: string; allocationId: string | null; answered: number | 'none' }[] = [];
  private healed = false;
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: { type?: string; data?: { allocation?: { id?: string } } } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        // recorded as it came
      }
      const arrival = { eventId: String(req.headers['tessera-event-id']), type: body.type ?? '?', allocationId: body.data?.allocation?.id ?? null, answered: 'none' as number | 'none' };
      this.arrivals.push(arrival);
      const answer = (status: number) => {
        arrival.answered = status;
        res.statusCode = status;
        res.end();
      };
      if (this.healed) return answer(200);
      const r = Math.random();
      const m = this.misbehaviour;
      if (r < m.slow) setTimeout(() => answer(200), 1500);
      else if (r < m.slow + m.error) answer(500);
      else if (r < m.slow + m.error + m.hang) return; // never answered: the sender's deadline ends it
      else if (r < m.slow + m.error + m.hang + m.hangUp) req.socket.destroy();
      else answer(200);
    });
  });
  url = '';

  constructor(private readonly misbehaviour: Misbehaviour) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** From now on every request gets 200 at once. */
  heal(): void {
    this.healed = true;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
