// A webhook receiver as a partner would run it: a local node:http server that keeps each event
// whose Tessera-Signature verifies (HMAC-SHA256 of "<t>.<raw body>" with the endpoint's secret),
// with the path it was posted to, and answers 200.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SignedReceiver {
  /** http://127.0.0.1:<port> */
  readonly base: string;
  /** Verified events, in arrival order. */
  readonly received: { path: string; body: any }[];
  close(): Promise<void>;
}

export async function startSignedReceiver(secret: string): Promise<SignedReceiver> {
  const received: SignedReceiver['received'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const signature = String(req.headers['tessera-signature']);
      const t = /t=(\d+)/.exec(signature)?.[1];
      const v1 = /v1=([0-9a-f]{64})/.exec(signature)?.[1];
      if (v1 === createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex')) received.push({ path: req.url!, body: JSON.parse(raw) });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** One POST as it arrived: its path, raw body and Tessera-Signature header. */
export interface RecordedDelivery {
  path: string;
  raw: string;
  signature: string;
}

/**
 * A receiver that keeps every POST unchecked, for a test that learns the secret later (createWebhook
 * returns it after the URL is given) or checks signatures its own way.
 */
export async function startRecorder(): Promise<{ url: string; received: RecordedDelivery[]; close(): Promise<void> }> {
  const received: RecordedDelivery[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url!, raw: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['tessera-signature']) });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
