// The WebSocket's own limits (config.websocket), used by ws.ts:
//   maxMessageBytes            ws's maxPayload: a larger message is refused at its frame header,
//                              before any of it is buffered (close 1009) — HTTP's body limit's match
//   maxUnauthenticatedBytes    what a socket may send in all until its connection_init is accepted
//                              (a key and nothing more); past it the socket is destroyed — else a
//                              client without a key could have a megabyte buffered and parsed
//   maxSubscriptionsPerSocket  subscriptions open at once on a socket, and per key on this
//   maxSubscriptionsPerKey     instance (LIMIT_REACHED beyond): the rate limit charges a subscribe
//                              message once, and each subscription keeps a feed open for as long as
//                              it lasts (services/liveStats.ts)
import type { Duplex } from 'node:stream';
import type { GraphQLError } from 'graphql';
import { WebSocket } from 'ws';
import type { Config } from './config';
import { apiError, ErrorCode } from './errors';
import type { Logger } from './logger';

export type WebSocketLimits = Config['websocket'];

/** What createServer's callers leave out (tests) takes these values: the documented defaults. */
export const WEBSOCKET_LIMIT_DEFAULTS: WebSocketLimits = {
  maxMessageBytes: 1_048_576,
  maxUnauthenticatedBytes: 16_384,
  maxSubscriptionsPerSocket: 20,
  maxSubscriptionsPerKey: 100,
};

/**
 * Until `release` is called (its connection_init accepted), `socket` may receive `limit` bytes in
 * all; past that it is destroyed. Counted on the raw socket, ahead of ws's parser, so that no
 * message is buffered whole: ws sees at most the one read (≤ 64 KiB) that crossed the limit. The
 * upgrade's `head` is counted too, as ws puts it back on the socket before anything is read.
 */
export function guardUnauthenticated(socket: Duplex, limit: number, onExceeded: () => void): { release(): void } {
  let received = 0;
  const count = (chunk: Buffer) => {
    received += chunk.length;
    if (received <= limit) return;
    socket.off('data', count);
    socket.destroy();
    onExceeded();
  };
  socket.prependListener('data', count);
  return { release: () => socket.off('data', count) };
}

/**
 * ws's socket, reporting a message over maxPayload as the refusal it is, in the log. ws has closed
 * the socket with 1009 by the time it emits that error; passed on, graphql-ws would print it to
 * stderr with its stack as "Internal error … Please check your implementation", once per message.
 */
export function refusalsLogged(logger: Logger, limits: WebSocketLimits): typeof WebSocket {
  return class extends WebSocket {
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (event !== 'error' || (args[0] as { code?: unknown } | undefined)?.code !== 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') return super.emit(event, ...args);
      logger.info({ limit: limits.maxMessageBytes }, 'websocket closed (1009): a message over WS_MAX_MESSAGE_BYTES');
      return true;
    }
  };
}

/** A socket, as the slot count sees it. */
export interface SlotHolder {
  /** The partner's or operator key's id (a key that can be revoked; ADMIN_API_KEY cannot). */
  keyOwner?: string;
  /** Subscriptions open on the socket. */
  slots: number;
}

/** Subscriptions open per socket and per key on this instance, against their caps. */
export function subscriptionSlots(limits: WebSocketLimits) {
  const byKey = new Map<string, number>();
  return {
    /** Takes a slot for `operation`; without one, the error that refuses it. */
    take(state: SlotHolder, operation: { holdsSlot?: boolean }): GraphQLError | undefined {
      if (state.slots >= limits.maxSubscriptionsPerSocket) {
        return apiError(
          ErrorCode.LIMIT_REACHED,
          `This socket has ${limits.maxSubscriptionsPerSocket} subscriptions open, the most it may (WS_MAX_SUBSCRIPTIONS_PER_SOCKET); complete one first.`,
          { limit: limits.maxSubscriptionsPerSocket },
        );
      }
      // ADMIN_API_KEY has no owner: the operator's own key is capped per socket only, as it is not rate limited either.
      const owner = state.keyOwner;
      const held = owner === undefined ? 0 : (byKey.get(owner) ?? 0);
      if (owner !== undefined && held >= limits.maxSubscriptionsPerKey) {
        return apiError(
          ErrorCode.LIMIT_REACHED,
          `This key has ${limits.maxSubscriptionsPerKey} subscriptions open on this server, the most it may (WS_MAX_SUBSCRIPTIONS_PER_KEY); complete one first.`,
          { limit: limits.maxSubscriptionsPerKey },
        );
      }
      state.slots += 1;
      if (owner !== undefined) byKey.set(owner, held + 1);
      operation.holdsSlot = true;
      return undefined;
    },
    /** Gives `operation`'s slot back, if it holds one (once: it may end more than one way). */
    release(state: SlotHolder, operation: { holdsSlot?: boolean }): void {
      if (!operation.holdsSlot) return;
      operation.holdsSlot = false;
      state.slots -= 1;
      const owner = state.keyOwner;
      if (owner === undefined) return;
      const held = (byKey.get(owner) ?? 1) - 1;
      if (held > 0) byKey.set(owner, held);
      else byKey.delete(owner);
    },
  };
}
