// A webhook receiver as a partner runs it: a local node:http server that checks each POST's
// Tessera-Signature with the endpoint's secret through src/webhooks/signature.ts (the function the
// documentation gives receivers), keeps what verified, and answers 200 (or what `answer` says).
// A POST that does not verify is answered 400 and kept apart, in `rejected`. Without a secret
// (a test that learns it later: createWebhook shows it after the URL is given) every POST is kept,
// and `verifiedWith` checks one afterwards.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queryable } from './sql';
import { until } from './time';
import { verifySignature } from '../../src/webhooks/signature';

/** One POST as it arrived. */
export interface Delivery {
  /** The path it was posted to ("/hook"). */
  path: string;
  /** Tessera-Event-Id. */
  eventId: string;
  /** Tessera-Signature. */
  signature: string;
  raw: string;
  /** The parsed body: { id, type, createdAt, data }. */
  body: any;
}

export interface Receiver {
  /** http://127.0.0.1:<port>: endpoints point at a path below it. */
  readonly url: string;
  readonly secret: string | undefined;
  /** Verified deliveries (every one without a secret), in arrival order. */
  readonly received: Delivery[];
  /** Deliveries whose signature did not verify with `secret`, answered 400. */
  readonly rejected: Delivery[];
  /** The status a verified delivery is answered with (200 unless a test sets this). */
  answer: (delivery: Delivery) => number;
  close(): Promise<void>;
}

export async function startReceiver(options: { secret?: string } = {}): Promise<Receiver> {
  const { secret } = options;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const delivery: Delivery = {
        path: req.url!,
        eventId: String(req.headers['tessera-event-id']),
        signature: String(req.headers['tessera-signature']),
        raw,
        body: JSON.parse(raw),
      };
      if (secret !== undefined && !verifiedWith(secret, delivery)) {
        receiver.rejected.push(delivery);
        res.statusCode = 400;
      } else {
        receiver.received.push(delivery);
        res.statusCode = receiver.answer(delivery);
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secret,
    received: [],
    rejected: [],
    answer: () => 200,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return receiver;
}

/** Whether the delivery's Tessera-Signature verifies with `secret`, now (verifySignature). */
export function verifiedWith(secret: string, delivery: Pick<Delivery, 'signature' | 'raw'>): boolean {
  return verifySignature(delivery.signature, delivery.raw, secret).ok;
}

/**
 * Waits until every event appended so far has been sent, and answered or given up on: the outbox
 * (webhook_events) is empty and no delivery is PENDING. What a receiver holds then is all it will
 * get for them, which is how a test says "and nothing else arrives" without sleeping.
 */
export async function untilWebhooksSettled(sql: Queryable, timeoutMs = 10_000): Promise<void> {
  await until(
    async () => {
      const { rows } = await sql.query(
        `SELECT (SELECT count(*)::int FROM webhook_events) AS outbox,
                (SELECT count(*)::int FROM webhook_deliveries WHERE status = 'PENDING') AS pending`,
      );
      return rows[0].outbox === 0 && rows[0].pending === 0;
    },
    { message: 'the webhook outbox to drain and every delivery to be DELIVERED or FAILED', timeoutMs },
  );
}

/** startReceiver without a secret: every POST kept, for signatures checked later with verifiedWith. */
export const startRecorder = (): Promise<Receiver> => startReceiver();
