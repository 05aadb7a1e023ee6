// The delivery worker: reads the event log forward into deliveries (the fan-out), claims the due
// ones, sends them, and records each attempt. Every step's state is in the store, so a crash or
// SIGKILL loses nothing: a delivery claimed but not recorded is claimed again when its lease runs
// out. A stop loses nothing either, and waits for no endpoint: the attempts under way are cut
// short and their deliveries given back, due again at once. Attempts' results are written
// together, one transaction for many. Given a pacing (the embedded store's), it keeps to its share
// of an event loop that other work saturates (pacing.ts).
import { outsideAudit } from '../audit/context.ts';
import type { Clock } from '../clock.ts';
import type { LoggedEvent } from '../events/store.ts';
import { wants } from '../events/types.ts';
import { newTimeOrderedId } from '../ids.ts';
import type { ClaimCaps } from './fair.ts';
import type { Outbound } from './outbound.ts';
import { type Pacing, UNPACED } from './pacing.ts';
import type { DeliverySettings } from './settings.ts';
import { signedHeaders } from './signing.ts';
import type { AttemptResult, ClaimedDelivery, NewDelivery, WebhookRecord, WebhookStore } from './store.ts';

export { DEFAULT_DELIVERY_SETTINGS, type DeliverySettings } from './settings.ts';

const FAN_OUT_STEP = 500;
/** A fan-out step's events while the worker is paced: small steps, so that it keeps to its share. */
const PACED_FAN_OUT_STEP = 50;

/** When to try again after attempt number `attempt` failed at `at`; null: give up. */
export function nextAttemptAt(settings: DeliverySettings, attempt: number, at: number, recordedAt: number, random = Math.random): number | null {
  const delays = settings.retryDelaysMs;
  const base = delays[Math.min(attempt - 1, delays.length - 1)]!;
  const next = at + Math.round(base * (1 + settings.jitter * (random() * 2 - 1)));
  return next > recordedAt + settings.giveUpAfterMs ? null : next;
}

/** The deliveries a batch of events makes: one per event and enabled endpoint that wants it. */
export function matchDeliveries(events: readonly LoggedEvent[], endpoints: readonly WebhookRecord[], recordedAt: number): NewDelivery[] {
  const out: NewDelivery[] = [];
  const byOrganization = Map.groupBy(endpoints, (w) => w.organizationId);
  for (const event of events) {
    for (const webhook of byOrganization.get(event.organizationId) ?? []) {
      // An endpoint hears of what is recorded from its creation on, not of older events.
      if (!wants(webhook.eventTypes, event.type) || event.recordedAt < webhook.createdAt) continue;
      out.push({ id: newTimeOrderedId('dlv'), webhookId: webhook.id, eventId: event.id, eventType: event.type, payload: event.envelope, recordedAt });
    }
  }
  return out;
}

export function createDeliveryWorker(deps: {
  store: WebhookStore;
  outbound: Outbound;
  clock: Clock;
  settings: DeliverySettings;
  log: { warn(obj: object, msg: string): void };
  /** Told of each attempt (metrics). */
  attempted?: (result: AttemptResult) => void;
  /** How much of the event loop the worker may take while requests keep it busy (pacing.ts); unpaced if absent. */
  pacing?: Pacing;
}) {
  const { store, outbound, clock, settings, log } = deps;
  const pacing = deps.pacing ?? UNPACED;
  let stopped = true;
  let running = false;
  /** Something was recorded since the last fan-out step began. */
  let recorded = false;
  /** More deliveries may be due than the last claim took. */
  let moreDue = false;
  /**
   * The last claim took less than it had room for while deliveries were leased: the caps may have
   * held due ones back, so recording an attempt's result (which ends its lease, freeing a place of
   * its endpoint and organization) claims again.
   */
  let capped = false;
  let timer: NodeJS.Timeout | undefined;
  /**
   * The soonest cycle asked for (`within`) while one ran, ms: that cycle's end honours it. Dropped,
   * a claim asked for by an attempt's end while a cycle's claim was reading (the freed place not yet
   * seen) left the backlog to the next poll.
   */
  let askedWhileRunning: number | undefined;
  /** When `timer` runs the next cycle (performance.now()). */
  let dueAt: number | undefined;
  let inFlight = 0;
  /**
   * Claimed, not yet attempted: an attempt starts from here the moment another ends, with no
   * round trip to the store in between. Refilled when it falls to half the concurrency.
   */
  let ready: Array<{ delivery: ClaimedDelivery; claimedAt: number }> = [];
  const lowWater = Math.max(1, Math.floor(settings.concurrency / 2));
  /** Places kept for endpoints with no attempt under way (none below 4 places). */
  const reserve = Math.floor(settings.concurrency / 4);
  /** Endpoint id → its attempts under way. */
  const underWay = new Map<string, number>();
  // No organization holds every place in hand: the claims of the others find room.
  const caps: ClaimCaps = { perEndpoint: settings.endpointConcurrency, perOrganization: Math.max(1, 2 * settings.concurrency - reserve) };
  let results: AttemptResult[] = [];
  /** Ends the wait of a flush gathering results (`gather`): enough of them are in hand. */
  let gathered: (() => void) | undefined;
  /**
   * Deliveries whose attempts have ended, until their results are recorded: still leased, but no
   * longer counted against the caps (store.ts, `claim`), so a slow disk sync does not hold back
   * the endpoint's next attempts.
   */
  const recording = new Set<string>();
  let flushing: Promise<void> | undefined;
  /** Aborted by `stop`: the attempts under way end at once (outbound.ts, `aborted`). */
  let stopping = new AbortController();
  /** The attempts under way, for `stop` to wait on. */
  const attempts = new Set<Promise<void>>();
  /** Attempts cut short by `stop`: their deliveries, for it to give back. */
  let cut: string[] = [];

  /** `work()`, its synchronous part (all of it on the embedded store) counted against the worker's share. */
  function timed<T>(work: () => T): T {
    const started = performance.now();
    try {
      return work();
    } finally {
      pacing.spent(performance.now() - started);
    }
  }

  function schedule(delay: number): void {
    clearTimeout(timer);
    dueAt = performance.now() + delay;
    // Woken by a request's commit, the cycle is still not part of that request's change: its
    // transactions carry no audit entry of the request (audit/context.ts).
    timer = outsideAudit(() => setTimeout(() => {
      dueAt = undefined;
      void cycle();
    }, delay));
  }

  /**
   * A cycle within `delay` ms. One already due by then is left alone: putting it off again on
   * every commit would, under a steady stream of commits, keep it from ever running. During a
   * cycle, its end decides (see `cycle`).
   */
  function within(delay: number): void {
    if (!stopped && running) askedWhileRunning = Math.min(askedWhileRunning ?? Infinity, delay);
    if (stopped || running || (dueAt !== undefined && dueAt <= performance.now() + delay)) return;
    schedule(delay);
  }

  /** Something was recorded: a fan-out step shortly. */
  function wake(): void {
    if (stopped) return;
    recorded = true;
    within(settings.wakeDelayMs);
  }

  async function cycle(): Promise<void> {
    if (stopped || running) return;
    if (!pacing.allowed()) {
      // This window's share is spent: the cycle runs in the next one.
      schedule(pacing.renewsIn());
      return;
    }
    running = true;
    recorded = false;
    moreDue = false;
    askedWhileRunning = undefined;
    /** The fan-out stopped short of the log's end (the share spent). */
    let behind = false;
    try {
      for (;;) {
        const step = pacing.saturated() ? PACED_FAN_OUT_STEP : FAN_OUT_STEP;
        const read = await timed(() => store.fanOut((events, endpoints) => matchDeliveries(events, endpoints, clock.now()), step, clock.now()));
        if (read < step || stopped) break;
        if (!pacing.allowed()) {
          behind = true;
          break;
        }
      }
      const room = 2 * settings.concurrency - inFlight - ready.length;
      if (room <= 0) {
        // Full: whether more is due is not known; look again when the ready ones run low.
        moreDue = true;
      } else if (!stopped && pacing.allowed()) {
        const now = clock.now();
        const claimed = await timed(() => store.claim(now, now + settings.leaseMs, room, caps, recording));
        for (const delivery of claimed) ready.push({ delivery, claimedAt: now });
        // A full claim, or one held to the caps, may have left more due: look again once the ready
        // ones run low (an attempt's end frees a place of its endpoint and organization).
        if (claimed.length > 0) moreDue = true;
        capped = claimed.length < room && (inFlight + ready.length > 0 || results.length > 0 || flushing !== undefined);
      } else {
        // Paced (or stopping): the claim is for a later cycle.
        moreDue = true;
      }
      pump();
    } catch (error) {
      log.warn({ err: error }, 'webhooks: the delivery worker could not read or claim; it tries again shortly');
    } finally {
      running = false;
      if (!stopped) {
        let delay = behind || (moreDue && ready.length <= lowWater) ? 0 : recorded ? settings.wakeDelayMs : settings.pollMs;
        if (askedWhileRunning !== undefined) delay = Math.min(delay, askedWhileRunning);
        if (!pacing.allowed()) {
          // Paced: what is left (the log, or attempts held back in `ready`) waits for the next window.
          const renews = pacing.renewsIn();
          delay = delay === 0 || ready.length > 0 ? renews : Math.max(delay, renews);
        }
        schedule(delay);
      }
    }
  }

  /**
   * The next ready delivery that may start, taken out of `ready`; undefined when none may. The
   * last `reserve` places go only to endpoints with no attempt under way, so that endpoints slow
   * to answer cannot take every place from the others. One held back too long (attempts slower
   * than the lease allows for) is dropped: its lease may run out during the attempt and another
   * node claim it, so it is left to be claimed again.
   */
  function nextReady(): ClaimedDelivery | undefined {
    const reserved = settings.concurrency - inFlight <= reserve;
    for (let i = 0; i < ready.length;) {
      const { delivery, claimedAt } = ready[i]!;
      if (clock.now() - claimedAt > settings.leaseMs / 3) {
        ready.splice(i, 1);
        continue;
      }
      if (!reserved || !underWay.has(delivery.webhookId)) {
        ready.splice(i, 1);
        return delivery;
      }
      i++;
    }
    return undefined;
  }

  /** Starts attempts from the ready ones while there are places. */
  function pump(): void {
    while (!stopped && inFlight < settings.concurrency && ready.length > 0) {
      if (!pacing.allowed()) {
        // The rest start in the next window, from a cycle then.
        within(pacing.renewsIn());
        return;
      }
      const delivery = nextReady();
      if (delivery === undefined) return;
      const running = attempt(delivery);
      attempts.add(running);
      void running.finally(() => attempts.delete(running));
    }
  }

  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    inFlight++;
    underWay.set(delivery.webhookId, (underWay.get(delivery.webhookId) ?? 0) + 1);
    const at = clock.now();
    const outcome = await timed(() =>
      outbound.post(delivery.url, signedHeaders(delivery.secrets, delivery.eventId, Math.floor(at / 1000), delivery.payload), delivery.payload, stopping.signal));
    inFlight--;
    const left = underWay.get(delivery.webhookId)! - 1;
    if (left === 0) underWay.delete(delivery.webhookId);
    else underWay.set(delivery.webhookId, left);
    if (outcome.aborted === true) {
      // Cut short by this process before the endpoint answered: no attempt of the endpoint's to
      // record or count. Given back, the delivery is due again at once, here after a restart or
      // on another node.
      if (stopped) cut.push(delivery.id);
      else void giveBack([delivery.id]);
      return;
    }
    const result: AttemptResult = {
      seq: delivery.seq,
      id: delivery.id,
      webhookId: delivery.webhookId,
      ok: outcome.ok,
      responseStatus: outcome.status,
      durationMs: outcome.durationMs,
      error: outcome.error,
      at,
      nextAt: outcome.ok ? null : nextAttemptAt(settings, delivery.attempt + 1, at, delivery.recordedAt),
      local: outcome.local === true,
    };
    deps.attempted?.(result);
    results.push(result);
    recording.add(result.id);
    if (results.length >= lowWater) gathered?.();
    void flush();
    pump();
    if (moreDue && ready.length <= lowWater) within(0);
  }

  /** Records the results in hand, one transaction after another until none is left. */
  function flush(): Promise<void> {
    // With nothing in hand the loop below would end before its first await, and its `finally`
    // would run before `flushing` is set: a settled promise would then stand for a flush forever.
    if (flushing === undefined && results.length > 0) {
      flushing = (async () => {
        try {
          while (results.length > 0) {
            await gather();
            const batch = results;
            results = [];
            try {
              await timed(() => store.complete(batch, settings.disableAfterMs));
              if (capped && ready.length <= lowWater) within(0);
            } catch (error) {
              // Not recorded: each delivery's lease runs out and it is sent again (at least once).
              log.warn({ err: error, deliveries: batch.length }, 'webhooks: could not record delivery attempts');
            } finally {
              for (const r of batch) recording.delete(r.id);
            }
          }
        } finally {
          flushing = undefined;
        }
      })();
    }
    return flushing ?? Promise.resolve();
  }

  /**
   * Before a flush: until `lowWater` results are in hand, or `recordDelayMs` has passed, or a stop.
   * A transaction's commit costs as much as some ten results' statements: recorded a few at a
   * time, the results cost the store more than their attempts.
   */
  function gather(): Promise<void> {
    if (stopped || results.length >= lowWater || settings.recordDelayMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, settings.recordDelayMs);
      function done(): void {
        clearTimeout(timer);
        gathered = undefined;
        resolve();
      }
      gathered = done;
    });
  }

  /** Claimed deliveries not attempted, or whose attempt was cut short: due again at once, for any node. */
  async function giveBack(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await store.release(ids);
    } catch (error) {
      log.warn({ err: error, deliveries: ids.length }, 'webhooks: could not give back claimed deliveries; their leases run out instead');
    }
  }

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      stopping = new AbortController();
      within(0);
    },
    wake,
    /**
     * Stops claiming and attempting, without waiting for any endpoint: the attempts under way are
     * cut short. Gives back their deliveries and the claimed ones not yet attempted (due again at
     * once), and records the results already in hand (an endpoint that answered first).
     */
    async stop(): Promise<void> {
      stopped = true;
      gathered?.();
      clearTimeout(timer);
      dueAt = undefined;
      stopping.abort();
      while (attempts.size > 0) await Promise.all(attempts);
      const unsent = [...ready.map((r) => r.delivery.id), ...cut];
      ready = [];
      cut = [];
      await giveBack(unsent);
      await flush();
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
