// The budget of a socket's client messages: a token bucket. A client may send `burst` messages at
// once and `ratePerSecond` a second after that; every subscribe may cost a snapshot, so a client
// must not be able to ask for them as fast as it can write.
export class TokenBucket {
  #tokens: number;
  #at: number;
  readonly #burst: number;
  readonly #perMs: number;

  constructor(burst: number, ratePerSecond: number, now: number) {
    this.#burst = burst;
    this.#perMs = ratePerSecond / 1000;
    this.#tokens = burst;
    this.#at = now;
  }

  /** Takes one token if there is one. */
  take(now: number): boolean {
    this.#tokens = Math.min(this.#burst, this.#tokens + Math.max(0, now - this.#at) * this.#perMs);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
