/** The options of {@link RedisStore}: their types, defaults and validation. */
import { knownKeys, wholeNumber } from "../config-fields.js";
import { PolicyConfigError } from "../errors.js";
import type { RedisCall } from "./client.js";

/**
 * Options of {@link RedisStore}; every field but `redis` has a default.
 *
 * @example
 * const options: RedisStoreOptions = {
 *   redis: (command, args) => ioredis.call(command, args),
 *   prefix: "np:",      // default
 *   clock: "host",      // default; "redis" reads Redis TIME
 *   timeoutMs: 500,     // default
 *   retries: 1,         // default: one retry after a timeout, same call
 *   dedupeMs: 30_000,   // default
 *   maxInFlight: 1_000, // default
 * };
 */
export interface RedisStoreOptions {
  /** Sends `EVALSHA`/`EVAL`: `(command, args) => ioredis.call(command, args)`. Required. */
  redis: RedisCall;
  /** Prepended to every key, so several policies can share one Redis. Default `"np:"`. */
  prefix?: string;
  /**
   * Whose clock decides windows and the day: `"host"` (default) uses `ChargeRequest.now`, as
   * `evaluate` does; `"redis"` uses Redis `TIME`, one clock for every process.
   */
  clock?: "host" | "redis";
  /**
   * Give up on a Redis attempt after this many milliseconds; after the retries the charge rejects
   * (503). The store keeps its own time whatever the client's settings. A charge that Redis runs after
   * the store gave up (`timeoutMs × (retries + 1)`) charges nothing: it carries that deadline,
   * checked against Redis `TIME`. Default 500.
   */
  timeoutMs?: number;
  /** Retries after a timeout, with the same call and nonce (never counted twice). Default 1. */
  retries?: number;
  /**
   * How long a charge's outcome is remembered, so that the store's own retry after a timeout (or the
   * late original, when Redis ran it after all) is answered without charging twice. Only the store's
   * retries of one call share the memo; it is not written at all with `retries: 0`. Default 30 000.
   */
  dedupeMs?: number;
  /**
   * Commands sent to Redis and not yet answered (or failed) by the client, at most. Past it, a
   * decision is refused at once with `RedisOverloadError` (503) without sending anything, so a
   * stalled Redis cannot pile up commands and memory in the client. A command the store stopped
   * waiting for still counts until the client settles it. Default 1 000.
   */
  maxInFlight?: number;
  /**
   * Charges sent in one round trip at most. The charges a store is handed in one turn of the event
   * loop go together, as one script call that runs each as if it came alone (its own nonce and memo;
   * one charge failing fails only itself); a lone charge is sent at the end of its turn, as before.
   * `1` sends every charge alone. Not used with `cluster` (each charge goes to its own slot's node).
   * Default 16: a busy turn goes out as several batches, so that Redis runs one while the host
   * prepares the next (measured: 64 in flight, batches of 8–32 beat one batch of 64 by ~40%).
   */
  batch?: number;
  /**
   * Redis Cluster: keys carry hash tags (a credential's budgets, test-send cap and idempotency
   * records in the credential's slot; a newsletter's dispatch cap in the newsletter's slot), and a
   * send or schedule takes two round trips (see docs/redis.md, "Redis Cluster"). `redis` must
   * route each command by its first key: `(command, args) => cluster.call(command, args)` with
   * ioredis. Default false.
   */
  cluster?: boolean;
}

/** The options checked, with every default filled in. */
export interface StoreSettings {
  readonly redis: RedisCall;
  readonly prefix: string;
  /** `"h"` (the host's clock) or `"r"` (Redis's), as the scripts read it. */
  readonly clock: "h" | "r";
  readonly timeoutMs: number;
  readonly retries: number;
  readonly dedupeMs: number;
  readonly maxInFlight: number;
  readonly batch: number;
  readonly cluster: boolean;
}

const DEFAULTS = { prefix: "np:", clock: "host", timeoutMs: 500, retries: 1, dedupeMs: 30_000, maxInFlight: 1_000, batch: 16 } as const;
const OPTIONS = ["redis", "prefix", "clock", "timeoutMs", "retries", "dedupeMs", "maxInFlight", "batch", "cluster"] as const;
/** The longest delay a timer keeps (2^31 − 1 ms, ~24.8 days): past it Node fires at once and warns, so the store would never wait. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function positive(field: string, value: unknown, fallback: number, integer: boolean): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new PolicyConfigError(field, `must be a ${integer ? "whole" : "finite"} number of milliseconds > 0; got ${String(value)}`);
  }
  return value;
}

/**
 * Checks the options (the first invalid field throws) and fills in the defaults.
 *
 * @throws PolicyConfigError naming the field, when an option is invalid.
 */
export function storeSettings(options: RedisStoreOptions): StoreSettings {
  if (typeof options !== "object" || options === null) throw new PolicyConfigError("options", "must be an object with at least `redis`");
  // a misspelt option (`prefx`, `timeoutMS`) would leave its default in force without a word: two environments sharing `np:`
  knownKeys(options as unknown as Record<string, unknown>, "", OPTIONS);
  if (typeof options.redis !== "function") {
    throw new PolicyConfigError("redis", "must be a function (command, args) => Promise<reply>, e.g. (c, a) => ioredis.call(c, a)");
  }
  if (options.prefix !== undefined && typeof options.prefix !== "string") throw new PolicyConfigError("prefix", `must be a string; got ${typeof options.prefix}`);
  if (options.clock !== undefined && options.clock !== "host" && options.clock !== "redis") {
    throw new PolicyConfigError("clock", `must be "host" or "redis"; got ${String(options.clock)}`);
  }
  const retries = wholeNumber(options.retries ?? DEFAULTS.retries, "retries", 0, 10);
  const maxInFlight = wholeNumber(options.maxInFlight ?? DEFAULTS.maxInFlight, "maxInFlight", 1);
  const batch = wholeNumber(options.batch ?? DEFAULTS.batch, "batch", 1, 1_000);
  const timeoutMs = positive("timeoutMs", options.timeoutMs, DEFAULTS.timeoutMs, false);
  if (timeoutMs * (retries + 1) > MAX_TIMER_MS) {
    throw new PolicyConfigError("timeoutMs", `× (retries + 1) must be at most ${MAX_TIMER_MS} ms (the longest a timer waits); got ${timeoutMs} × ${retries + 1}`);
  }
  const prefix = options.prefix ?? DEFAULTS.prefix;
  const clock = (options.clock ?? DEFAULTS.clock) === "redis" ? "r" : "h";
  const dedupeMs = positive("dedupeMs", options.dedupeMs, DEFAULTS.dedupeMs, true);
  if (options.cluster !== undefined && typeof options.cluster !== "boolean") throw new PolicyConfigError("cluster", `must be true or false; got ${String(options.cluster)}`);
  const cluster = options.cluster === true;
  if (cluster && /[{}]/.test(prefix)) {
    throw new PolicyConfigError("prefix", "must not hold { or } with cluster: true (the store's hash tags decide each key's slot)");
  }
  return { redis: options.redis, prefix, clock, timeoutMs, retries, dedupeMs, maxInFlight, batch, cluster };
}
