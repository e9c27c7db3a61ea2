// Live updates for the campaignStats subscription. Whatever changes a campaign's figures — claims,
// holds, releases, loads, status changes — calls changed(campaignId); subscribers of that campaign
// on this instance are woken. With REDIS_URL the signal also goes through Redis pub/sub, so that
// subscribers on every instance hear about claims any instance served; without it, the workers of
// one `WEB_CONCURRENCY` cluster pass signals to each other through the primary. Signals carry no data (the
// subscription re-reads the stats), so a lost or duplicated signal costs at most a late or an
// extra read — and every subscription also re-reads on its own every few seconds (which covers
// expiries by the sweeper and instances without Redis).
import cluster from 'node:cluster';
import { EventEmitter } from 'node:events';
import type Redis from 'ioredis';
import type { Logger } from './logger';
import { DEFAULT_REDIS_KEY_PREFIX } from './redisKeys';

/** A campaign's figures may have changed. In Redis, the channel is this after the deployment's prefix (redisKeys.ts). */
const CHANNEL = 'campaign-changed';
/** A partner's key was revoked, rotated or changed: caches drop it, its sockets re-check it. */
const KEY_CHANNEL = 'partner-key-changed';
/** Per campaign, at most one published signal per this many ms (claims can arrive by thousands a second). */
const PUBLISH_EVERY_MS = 100;

export interface LiveUpdates {
  changed(campaignId: string): void;
  /** Calls `listener` when the campaign may have changed; returns the unsubscribe function. */
  watch(campaignId: string, listener: () => void): () => void;
  /** Tells every instance that a partner's key was revoked, rotated or changed. */
  keyChanged(partnerId: string): void;
  /** Calls `listener` with the partner whose key changed, on any instance; returns the unsubscribe function. */
  onKeyChanged(listener: (partnerId: string) => void): () => void;
  close(): Promise<void>;
}

interface ClusterSignal {
  channel: typeof CHANNEL | typeof KEY_CHANNEL;
  /** The campaign (CHANNEL) or the partner (KEY_CHANNEL). */
  id: string;
}
const isClusterSignal = (message: unknown): message is ClusterSignal =>
  typeof message === 'object' &&
  message !== null &&
  ((message as ClusterSignal).channel === CHANNEL || (message as ClusterSignal).channel === KEY_CHANNEL) &&
  typeof (message as ClusterSignal).id === 'string';

/** In the primary of a cluster without Redis: passes each worker's signals on to the other workers. */
export function relayLiveUpdatesBetweenWorkers(): void {
  cluster.on('message', (from, message: unknown) => {
    if (!isClusterSignal(message)) return;
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker && worker !== from && worker.isConnected()) worker.send(message);
    }
  });
}

/**
 * `redis`: signals go through Redis pub/sub (every instance). Else `throughPrimary` (a cluster
 * worker): through the primary's relay to the other workers. Else in this process only.
 */
export function createLiveUpdates(options: { redis?: Redis; redisKeyPrefix?: string; throughPrimary?: boolean; logger: Logger }): LiveUpdates {
  const local = new EventEmitter();
  local.setMaxListeners(0);
  const keys = new EventEmitter();
  keys.setMaxListeners(0);
  const pending = new Map<string, NodeJS.Timeout>();
  let subscriber: Redis | undefined;
  const prefix = options.redisKeyPrefix ?? DEFAULT_REDIS_KEY_PREFIX;
  const campaignChannel = `${prefix}${CHANNEL}`;
  const keyChannel = `${prefix}${KEY_CHANNEL}`;

  if (options.redis) {
    // A subscribing connection cannot send other commands: a dedicated duplicate of the client.
    subscriber = options.redis.duplicate({ enableOfflineQueue: true });
    subscriber.on('error', (err) => options.logger.warn({ error: err.message }, 'redis subscriber error'));
    subscriber.on('message', (channel: string, id: string) => (channel === keyChannel ? keys.emit('changed', id) : local.emit(id)));
    subscriber.subscribe(campaignChannel, keyChannel).catch((err: Error) => options.logger.warn({ error: err.message }, 'redis subscribe failed'));
  }

  const onPrimaryMessage = (message: unknown) => {
    if (!isClusterSignal(message)) return;
    if (message.channel === KEY_CHANNEL) keys.emit('changed', message.id);
    else local.emit(message.id);
  };
  if (!options.redis && options.throughPrimary) process.on('message', onPrimaryMessage);

  const signal = (campaignId: string) => {
    if (options.redis) {
      options.redis.publish(campaignChannel, campaignId).catch(() => local.emit(campaignId));
      return;
    }
    local.emit(campaignId);
    if (options.throughPrimary && process.connected) process.send?.({ channel: CHANNEL, id: campaignId } satisfies ClusterSignal);
  };
  const publish = (campaignId: string) => {
    pending.delete(campaignId);
    signal(campaignId);
  };

  return {
    changed(campaignId) {
      if (pending.has(campaignId)) return;
      // Leading edge now, trailing edge after the interval: a burst of claims costs two signals.
      signal(campaignId);
      pending.set(campaignId, setTimeout(() => publish(campaignId), PUBLISH_EVERY_MS).unref());
    },
    watch(campaignId, listener) {
      local.on(campaignId, listener);
      return () => local.off(campaignId, listener);
    },
    keyChanged(partnerId) {
      keys.emit('changed', partnerId);
      if (options.redis) options.redis.publish(keyChannel, partnerId).catch(() => undefined);
      else if (options.throughPrimary && process.connected) process.send?.({ channel: KEY_CHANNEL, id: partnerId } satisfies ClusterSignal);
    },
    onKeyChanged(listener) {
      keys.on('changed', listener);
      return () => keys.off('changed', listener);
    },
    async close() {
      for (const timer of pending.values()) clearTimeout(timer);
      pending.clear();
      process.off('message', onPrimaryMessage);
      if (subscriber) await subscriber.quit().catch(() => subscriber?.disconnect());
    },
  };
}
