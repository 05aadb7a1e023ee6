// The time limits and sizes of live streams (docs/API.md "Live streams"). Not configuration for operators:
// the contract fixes them; tests shorten them to keep waits short.

export interface StreamSettings {
  /** A stream not attached within this long of its creation expires; tickets last as long. */
  attachWindowMs: number;
  /** A stream whose socket closed expires after this long unless a socket attaches again. */
  detachedTtlMs: number;
  /** How long an ended or expired stream can still be read (status `closed`) before it is forgotten. */
  closedRetentionMs: number;
  /** Messages are kept at least this long for replay (`lastSeq`)... */
  replayWindowMs: number;
  /** ...up to this many per stream (a power of two)... */
  replayMaxMessages: number;
  /** ...and, over all streams, this many distinct events and bytes of them. */
  logMaxEntries: number;
  logMaxBytes: number;
  /** The server pings every socket this often... */
  pingIntervalMs: number;
  /** ...and terminates one that has not answered a ping within this long. */
  pongTimeoutMs: number;
  /** Above this many bytes waiting to be sent, a socket gets conflated (newest-value) updates... */
  slowConsumerBytes: number;
  /** ...and if it stays above it this long, it is closed with 1013. */
  slowConsumerMs: number;
  /** A socket we closed that has not finished closing after this long is terminated. */
  closeGraceMs: number;
  /** Client messages larger than this close the socket with 1009. */
  maxClientMessageBytes: number;
  /**
   * A socket may send this many messages at once, and `clientMessageRate` a second after that;
   * each message over that budget is answered `rate-limited`, and after `clientMessageBurst` of
   * them in a row the socket is closed with 1008.
   */
  clientMessageBurst: number;
  clientMessageRate: number;
  /**
   * Cluster mode: how long a stream counts in its organization's quota of open streams unless its
   * node renews it (every third of this): a node that dies gives its streams' places back.
   */
  openLeaseMs: number;
}

export const DEFAULT_STREAM_SETTINGS: StreamSettings = {
  attachWindowMs: 60_000,
  detachedTtlMs: 60_000,
  closedRetentionMs: 15 * 60_000,
  replayWindowMs: 60_000,
  replayMaxMessages: 16_384,
  logMaxEntries: 1_000_000,
  logMaxBytes: 256 * 1024 * 1024,
  pingIntervalMs: 30_000,
  pongTimeoutMs: 30_000,
  slowConsumerBytes: 1024 * 1024,
  slowConsumerMs: 10_000,
  closeGraceMs: 5_000,
  maxClientMessageBytes: 64 * 1024,
  clientMessageBurst: 20,
  clientMessageRate: 5,
  openLeaseMs: 60_000,
};
