/**
 * The one thing the Redis store asks of a client: send `EVALSHA` or `EVAL` and return the reply.
 * Every client library can do that in one line, so the store depends on none of them.
 *
 * This file also holds how the store talks through that function: a bound on what is in flight, a
 * deadline per call, and the deadline's translation into Redis's clock (see {@link Link}).
 */
import { brand, isBranded } from "../errors.js";
import type { Script } from "./scripts/script.js";

const TIMEOUT_ERROR = Symbol.for("newsletter-policy.RedisTimeoutError");
const OVERLOAD_ERROR = Symbol.for("newsletter-policy.RedisOverloadError");

/**
 * Sends one `EVALSHA` or `EVAL` command and resolves with Redis's reply (rejecting on an error reply).
 * `args` are the command's arguments after its name: the SHA-1 or script, the number of keys, the keys,
 * then the script's arguments. With Redis Cluster, route by the first key (ioredis `Cluster.call`
 * and node-redis `cluster.sendCommand(firstKey, …)` both do).
 *
 * @example
 * // ioredis v5
 * const call: RedisCall = (command, args) => redis.call(command, args);
 * // node-redis v5
 * const call: RedisCall = (command, args) => client.sendCommand([command, ...args]);
 */
export type RedisCall = (command: "EVALSHA" | "EVAL", args: string[]) => Promise<unknown>;

/**
 * The store gave up waiting for Redis: the command may or may not have run. A charge that Redis runs
 * after this point charges nothing (it carries a deadline), and the store's own retry is answered from
 * the remembered outcome, so it never counts twice.
 *
 * @example
 * const policy = createPolicy({
 *   store,
 *   onStoreError: (error) => { if (error instanceof RedisTimeoutError) metrics.increment("redis.timeout"); },
 * });
 */
export class RedisTimeoutError extends Error {
  /** `instanceof` holds across the package's two builds (see `PolicyConfigError`). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isBranded(this, TIMEOUT_ERROR, value);
  }

  /** How long the store waited (ms). */
  readonly timeoutMs: number;

  /**
   * @param timeoutMs - how long the store waited.
   * @param what - which script timed out.
   */
  constructor(timeoutMs: number, what: string) {
    super(`newsletter-policy/redis: no reply from Redis within ${timeoutMs} ms (${what})`);
    this.name = "RedisTimeoutError";
    this.timeoutMs = timeoutMs;
    brand(this, TIMEOUT_ERROR);
  }
}

/**
 * Too many calls to Redis are unanswered (`maxInFlight`): Redis is stalled, unreachable or
 * overloaded. The store refuses at once, without sending anything, so that a stall cannot pile up
 * commands (and memory) without bound; `createPolicy` answers 503.
 *
 * @example
 * const policy = createPolicy({
 *   store,
 *   onStoreError: (error) => { if (error instanceof RedisOverloadError) metrics.increment("redis.overload"); },
 * });
 */
export class RedisOverloadError extends Error {
  /** `instanceof` holds across the package's two builds (see `PolicyConfigError`). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isBranded(this, OVERLOAD_ERROR, value);
  }

  /** The bound that was reached (`maxInFlight`). */
  readonly maxInFlight: number;

  /** @param maxInFlight - the bound that was reached. */
  constructor(maxInFlight: number) {
    super(`newsletter-policy/redis: ${maxInFlight} calls to Redis are unanswered (maxInFlight); refusing without sending`);
    this.name = "RedisOverloadError";
    this.maxInFlight = maxInFlight;
    brand(this, OVERLOAD_ERROR);
  }
}

function isNoScript(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return message.startsWith("NOSCRIPT") || message.includes("NOSCRIPT ");
}

/**
 * A cluster node's `TRYAGAIN`: the keys of one call are split between two nodes while their slot
 * migrates key by key, and the command was not run. node-redis's cluster client hands it over as it
 * is (found by a drill: 8.7 % of decisions answered 503 while a slot migrated).
 *
 * ioredis's Cluster sends it again itself, up to `maxRedirections` (16), then hands over "Too many
 * Cluster redirections. Last error: ReplyError: TRYAGAIN …" (found by a Redis drill: while a slot
 * of 4 000 keys migrated, ioredis answered 6 826 of 9 000 decisions 503 this way). Its last send
 * was refused unrun, but an earlier one in its count may have run (ioredis also resends after a
 * closed connection and `CLUSTERDOWN` within that count; found by a review), so that form is sent
 * again only when `repeatable`: when every script the store sends is safe to run twice (a charge
 * answered from its memo, which `retries: 0` does not write; a release, a read).
 */
function isTryAgain(error: unknown, repeatable: boolean): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return message.startsWith("TRYAGAIN") || (repeatable && REDIRECTED_TRYAGAIN.test(message));
}

const REDIRECTED_TRYAGAIN = /^Too many Cluster redirections\. Last error: \w*Error: TRYAGAIN/;

/**
 * An error that says the store was set up for another kind of server, with what to do: every send
 * answered 503 with Redis's bare `CROSSSLOT` (a store without `cluster: true` over a cluster
 * client) or `MOVED` (a single-node client connected to a cluster node), which do not say so
 * (found by a new-user review). Any other error as it is.
 */
function explained(error: unknown): unknown {
  const message = error instanceof Error ? error.message : String(error);
  let hint: string | undefined;
  if (/^(?:\w*Error: )?CROSSSLOT/.test(message)) hint = "the server is a Redis Cluster: create the RedisStore with cluster: true (docs/redis.md, Redis Cluster)";
  else if (/^(?:\w*Error: )?MOVED \d+ /.test(message)) hint = "the server is a Redis Cluster node: send through a cluster client (ioredis Cluster, node-redis createCluster) and create the RedisStore with cluster: true";
  return hint === undefined ? error : new Error(`${message} (${hint})`, { cause: error });
}

/** How long a send waits before it tries again after a `TRYAGAIN` (a slot's keys move in milliseconds). */
const TRY_AGAIN_MS = 20;

const TIMED_OUT = Symbol("timed out");

/** Hands `late` the first reply of `live` (the sends out when a call gave up) that did not come back expired. */
function lateReplies(live: readonly Promise<Settled>[], timed: Timed | undefined, late: (reply: unknown) => void): void {
  let handed = false;
  for (const sent of live) {
    void sent.then((settled) => {
      if (handed || settled.failed || (timed !== undefined && timed.expired(settled.reply))) return;
      handed = true;
      late(settled.reply);
    });
  }
}

/** How one send of a call settled (a reply, or the error it failed with). */
interface Settled {
  readonly sent: Promise<Settled>;
  readonly reply: unknown;
  readonly failed: boolean;
  readonly error: unknown;
}

/**
 * Runs `f` after the event loop's next poll for I/O. A timer whose time came while the process was
 * blocked (a long synchronous task) runs before the replies that arrived meanwhile are read: answered
 * then, a charge Redis made and replied to in time was a 503 that still counted (found by a
 * multi-process drill: 40 of 40 answered 503 after a 1.2 s stall, all 40 charged).
 */
const afterPoll: (f: () => void) => void = typeof setImmediate === "function" ? (f) => void setImmediate(f) : (f) => void setTimeout(f, 0);

function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  return new Promise((resolve, reject) => {
    // a reply read in the poll after the timer fired wins: the promise settles once, with it
    const timer = setTimeout(() => afterPoll(() => resolve(TIMED_OUT)), Math.max(0, ms));
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** How a script reports the Redis time it ran at, and that it ran past its deadline. */
export interface Timed {
  /** Index of the argument that carries the deadline (Redis ms; `''` = none). */
  readonly deadlineArg: number;
  /** The Redis time (ms) the reply was made at, when it carries one. */
  timeOf(reply: unknown): number | undefined;
  /** The script ran after its deadline and did nothing. */
  expired(reply: unknown): boolean;
}

/** How many recent differences the offset is the largest of. */
const SAMPLES = 64;
/** A difference this far below the offset means Redis's clock stepped back. */
const STEP_MS = 1000;

/**
 * How the store talks to Redis.
 *
 * - **Bound.** Every command sent counts as in flight until the client settles its promise (not
 *   until the store stops waiting): that is what a stalled Redis piles up in the client. Past
 *   `maxInFlight`, the store throws {@link RedisOverloadError} without sending. A call that timed out
 *   and has no room to be sent again is not resent: it waits for the command it already sent until
 *   it gives up, never answering sooner than that command's deadline.
 * - **Deadline.** A call gives up `timeoutMs × (retries + 1)` after it starts ({@link RedisTimeoutError}).
 *   A charge carries that moment in Redis's clock; the script compares it with Redis `TIME` and
 *   charges nothing past it. The translation needs no agreement between the clocks: the store keeps
 *   `offset` = the largest recent (Redis time in a reply − host monotonic time when that reply
 *   arrived). Redis reads its time before the reply leaves, so every such difference is ≤ the true
 *   offset: a deadline is never later than the true give-up moment, and a command that Redis runs
 *   after its caller was answered 503 never charges, however late the client delivers it. The price:
 *   a command that runs within one reply's trip of the give-up moment is refused as expired (its
 *   caller was about to time out anyway). The host's monotonic clock never steps. The largest of the
 *   last 64 differences is used, so that a slow drift of Redis's clock ages out; a difference more
 *   than a second below it can only be Redis's clock stepping back, and replaces them all at once. If
 *   Redis's clock steps forward, a charge may come back "expired" while the caller still waits: that
 *   reply has already raised the offset, and the store sends once more (nothing was charged).
 *   Before the first reply the store knows no offset and sends no deadline.
 */
export class Link {
  /** Commands sent whose promise the client has not settled yet. */
  inFlight = 0;
  /** Redis ms − host monotonic ms, a lower bound of the true difference (see the class comment). */
  offset: number | undefined;
  /** The latest differences, newest last (at most {@link SAMPLES}). */
  private readonly samples: number[] = [];

  /**
   * @param call - the client function.
   * @param timeoutMs - per attempt.
   * @param retries - attempts after a timeout.
   * @param maxInFlight - unsettled commands at most.
   * @param monotonic - the host's monotonic clock (ms).
   */
  constructor(
    readonly call: RedisCall,
    readonly timeoutMs: number,
    readonly retries: number,
    readonly maxInFlight: number,
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  /** Sends one command, counted as `weight` calls in flight (a batch of charges counts each) until the client settles it. */
  private send(command: "EVALSHA" | "EVAL", args: string[], timed: Timed | undefined, weight: number): Promise<unknown> {
    // a batch's resend counts all its charges again while the first send may still be unsettled
    if (weight > this.room) return Promise.reject(new RedisOverloadError(this.maxInFlight));
    let promise: Promise<unknown>;
    try {
      promise = Promise.resolve(this.call(command, args));
    } catch (error) {
      return Promise.reject(error);
    }
    this.inFlight += weight;
    promise.then(
      (reply) => {
        this.inFlight -= weight;
        const t = timed?.timeOf(reply);
        if (t !== undefined && Number.isFinite(t)) this.learn(t - this.monotonic());
      },
      () => {
        this.inFlight -= weight;
      },
    );
    return promise;
  }

  /** How many more calls may be sent before `maxInFlight` refuses them. */
  get room(): number {
    return Math.max(0, this.maxInFlight - this.inFlight);
  }

  /** Takes one (Redis time − arrival) difference: a lower bound of the true offset. */
  private learn(difference: number): void {
    const samples = this.samples;
    // more than a second below the offset: Redis's clock stepped back (delays never vary that much)
    if (this.offset !== undefined && difference < this.offset - STEP_MS) {
      samples.length = 0;
      this.offset = undefined;
    }
    samples.push(difference);
    const dropped = samples.length > SAMPLES ? samples.shift() : undefined;
    // the largest of the samples, kept as they come: scanned again only when the largest leaves
    if (this.offset === undefined || difference >= this.offset) this.offset = difference;
    else if (dropped === this.offset) this.offset = Math.max(...samples);
  }

  /**
   * Runs a script with its keys and arguments: one round trip (two after a script cache flush).
   * Only a timeout is retried: every script is safe to repeat (charge remembers its outcome by
   * nonce, release is idempotent, read writes nothing); an error reply would only repeat itself,
   * but for a cluster's `TRYAGAIN` (the script did not run), sent again until the give-up moment.
   *
   * @param script - the script.
   * @param what - its name, for errors.
   * @param keys - `KEYS`.
   * @param args - `ARGV`; with `timed`, `args[timed.deadlineArg]` is set here.
   * @param timed - for a script that checks a deadline.
   * @param weight - how many calls the command carries (a batch of charges), for `maxInFlight`.
   * @param late - called with the reply of a send that answers after the call gave up, once, unless
   *   it says it ran past its deadline: the command ran in time, but its reply was read too late (a
   *   reply Redis wrote late, behind a backlog, or a process too busy to read it), so the caller was
   *   answered 503 for what Redis did. The caller can undo it (see `RedisStore`).
   * @returns Redis's reply.
   */
  async run(script: Script, what: string, keys: readonly string[], args: readonly string[], timed?: Timed, weight = 1, late?: (reply: unknown) => void): Promise<unknown> {
    const start = this.monotonic();
    const giveUp = start + this.timeoutMs * (this.retries + 1);
    const timeout = () => new RedisTimeoutError(Math.round(this.monotonic() - start), what);
    // EVALSHA's arguments, built once: the SHA-1, the number of keys, the keys, then ARGV from `at`
    const command: string[] = [script.sha, String(keys.length)];
    for (const key of keys) command.push(key);
    const at = command.length;
    for (const arg of args) command.push(arg);
    // Every send of this call that has not settled yet. While one is out it may still run, and
    // charge, until its deadline: the call answers with the first reply, and fails only once none is
    // left to answer, or at the give-up moment (never sooner, so that nothing charges after a 503).
    const live: Promise<Settled>[] = [];
    let sends = 0;
    const launch = (): void => {
      // a resend is a new array: a client may still hold the one it was handed
      const argv = sends++ === 0 ? command : command.slice();
      if (timed !== undefined) argv[at + timed.deadlineArg] = this.offset === undefined ? "" : String(giveUp + this.offset);
      const sent: Promise<Settled> = this.attempt(script, argv, timed, weight, giveUp).then(
        (reply) => ({ sent, reply, failed: false, error: undefined }),
        (error: unknown) => ({ sent, reply: undefined, failed: true, error }),
      );
      live.push(sent);
    };
    let timeouts = 0;
    let resynced = false;
    let failure: unknown;
    launch();
    for (;;) {
      if (live.length === 0) throw failure;
      // most calls have one send out: it is waited for as it is, not through a race
      const settled = await within(live.length === 1 ? live[0]! : Promise.race(live), Math.min(this.timeoutMs, giveUp - this.monotonic()));
      if (settled === TIMED_OUT) {
        // Only the monotonic clock says the call has given up: a timer can fire up to a millisecond
        // early, and a send may still run (and charge) until the deadline it carries.
        if (this.monotonic() >= giveUp) {
          if (late !== undefined) lateReplies(live, timed, late);
          throw timeout();
        }
        // only a timeout is retried; with no room under maxInFlight, the sends already out are waited for
        if (++timeouts <= this.retries && weight <= this.room) launch();
        continue;
      }
      live.splice(live.indexOf(settled.sent), 1);
      // an error (an error reply is not retried: it would only repeat itself); earlier sends may still answer
      if (settled.failed) failure = settled.error;
      else if (timed !== undefined && timed.expired(settled.reply)) {
        // Redis says the deadline passed while we still wait: the command ran within a reply's trip
        // of the give-up moment, or Redis's clock stepped forward. The reply has raised the offset
        // already (send's callback runs first); send once more while there is time.
        failure = timeout();
        if (!resynced && this.monotonic() < giveUp && weight <= this.room) {
          resynced = true;
          launch();
        }
      } else return settled.reply;
    }
  }

  /**
   * One send: EVALSHA, and EVAL when Redis has lost the script (a restart, `SCRIPT FLUSH`); sent
   * again after a `TRYAGAIN` while there is time before `giveUp` (the script did not run).
   */
  private async attempt(script: Script, argv: string[], timed: Timed | undefined, weight: number, giveUp: number): Promise<unknown> {
    for (;;) {
      try {
        return await this.send("EVALSHA", argv, timed, weight).catch((error: unknown) => {
          if (!isNoScript(error)) throw error;
          const source = argv.slice();
          source[0] = script.source;
          return this.send("EVAL", source, timed, weight);
        });
      } catch (error) {
        // with retries the store remembers each charge's outcome (its memo), so a repeat is answered from it
        if (!isTryAgain(error, this.retries > 0) || this.monotonic() + TRY_AGAIN_MS >= giveUp) throw explained(error);
        await new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_MS));
      }
    }
  }

}
