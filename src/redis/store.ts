/**
 * Counters in Redis, shared by every server process: one Lua script per decision checks every
 * budget and the daily cap of a request and charges them all or none (DESIGN §2), in one round trip.
 */
import { PolicyConfigError } from "../errors.js";
import type { BudgetCharge, ChargeOutcome, ChargeRequest, PolicyStore, WindowReading } from "../store.js";
import type { ReleaseTicket } from "../types.js";
import { Link, type RedisCall, type Timed } from "./client.js";
import { CHARGE, READ, RELEASE } from "./scripts.js";

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
  /** Retries after a timeout, with the same request id (never counted twice). Default 1. */
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
}

const DEFAULTS = { prefix: "np:", clock: "host", timeoutMs: 500, retries: 1, dedupeMs: 30_000, maxInFlight: 1_000 } as const;
/** Cap sets outlive their day by this much, so a host whose clock runs behind still finds them. */
const CAP_GRACE_MS = 60 * 60 * 1000;
/**
 * Windows and idempotency records outlive their end (in the deciding clock) by this much. The script
 * decides from the stored start and expiry, so a key's TTL is only garbage collection; the slack
 * keeps a record alive for a host whose clock runs a little behind Redis's.
 */
const EXPIRY_SLACK_MS = 10_000;
/** The member sequence outlives every cap set that may hold its members (a day plus grace). */
const SEQ_TTL_MS = 2 * 24 * 60 * 60 * 1000;

function positive(field: string, value: unknown, fallback: number, integer: boolean): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new PolicyConfigError(field, `must be a ${integer ? "whole" : "finite"} number of milliseconds > 0; got ${String(value)}`);
  }
  return value;
}

function strings(reply: unknown, what: string): string[] {
  if (!Array.isArray(reply)) throw new Error(`newsletter-policy/redis: unexpected reply to ${what}: ${String(reply)}`);
  return reply.map(String);
}

function readings(flat: readonly string[]): WindowReading[] {
  const out: WindowReading[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ count: Number(flat[i]), resetAt: Number(flat[i + 1]) });
  return out;
}

/** The charge script's deadline argument (0-based in ARGV) and how its replies carry Redis's time. */
const CHARGE_TIMED: Timed = {
  deadlineArg: 15,
  timeOf: (reply) => (Array.isArray(reply) ? Number(reply[1]) : undefined),
  expired: (reply) => Array.isArray(reply) && String(reply[0]) === "e",
};

function outcomeOf(reply: string[]): ChargeOutcome {
  const [kind, , now, a, b, ...rest] = reply;
  const base = now === "" || now === undefined ? { windows: readings(rest) } : { windows: readings(rest), now: Number(now) };
  switch (kind) {
    case "s":
      return { ...base, kind: "budget_spent" };
    case "x":
      return { ...base, kind: "conflict", fingerprint: a! };
    case "r":
      return { ...base, kind: "cap_reached", count: Number(a) };
    case "c":
      return b ? { ...base, kind: "charged", replay: a === "1", member: b } : { ...base, kind: "charged", replay: a === "1" };
    default:
      throw new Error(`newsletter-policy/redis: unexpected reply to charge: ${reply.join(" ")}`);
  }
}

/**
 * A {@link PolicyStore} in Redis, for many server processes sharing one set of budgets and caps.
 * Every decision is one Lua script (`EVALSHA`, falling back to `EVAL` after a restart or
 * `SCRIPT FLUSH`); every key expires with its window, day or idempotency record.
 *
 * @param options - `redis` (required: sends `EVALSHA`/`EVAL`), `prefix` (default `"np:"`), `clock`
 *   (default `"host"`), `timeoutMs` (default 500), `retries` on timeout (default 1), `dedupeMs`
 *   (default 30 000), `maxInFlight` (default 1 000).
 * @throws PolicyConfigError naming the field, when an option is invalid.
 * @example
 * import { Redis } from "ioredis";
 * import { createPolicy } from "newsletter-policy";
 * import { RedisStore } from "newsletter-policy/redis";
 *
 * const redis = new Redis(process.env.REDIS_URL);
 * const store = new RedisStore({ redis: (command, args) => redis.call(command, args) });
 * const policy = createPolicy({ store });
 */
export class RedisStore implements PolicyStore {
  private readonly link: Link;
  private readonly prefix: string;
  private readonly clock: "h" | "r";
  private readonly dedupeMs: number;
  /** Random per store instance: with `calls`, a nonce for each charge that no other process uses. */
  private readonly instance = globalThis.crypto.randomUUID().replaceAll("-", "").slice(0, 16);
  private calls = 0;

  /**
   * Validates the options; sends nothing to Redis until the first decision.
   *
   * @param options - see {@link RedisStoreOptions}; only `redis` is required.
   * @throws PolicyConfigError naming the field, when an option is invalid.
   * @example
   * const store = new RedisStore({ redis: (command, args) => client.sendCommand([command, ...args]), prefix: "billing-api:" });
   */
  constructor(options: RedisStoreOptions) {
    if (typeof options !== "object" || options === null) throw new PolicyConfigError("options", "must be an object with at least `redis`");
    if (typeof options.redis !== "function") {
      throw new PolicyConfigError("redis", "must be a function (command, args) => Promise<reply>, e.g. (c, a) => ioredis.call(c, a)");
    }
    if (options.prefix !== undefined && typeof options.prefix !== "string") throw new PolicyConfigError("prefix", `must be a string; got ${typeof options.prefix}`);
    if (options.clock !== undefined && options.clock !== "host" && options.clock !== "redis") {
      throw new PolicyConfigError("clock", `must be "host" or "redis"; got ${String(options.clock)}`);
    }
    const retries = options.retries ?? DEFAULTS.retries;
    if (typeof retries !== "number" || !Number.isInteger(retries) || retries < 0 || retries > 10) {
      throw new PolicyConfigError("retries", `must be a whole number from 0 to 10; got ${String(retries)}`);
    }
    const maxInFlight = options.maxInFlight ?? DEFAULTS.maxInFlight;
    if (typeof maxInFlight !== "number" || !Number.isInteger(maxInFlight) || maxInFlight < 1) {
      throw new PolicyConfigError("maxInFlight", `must be a whole number ≥ 1; got ${String(maxInFlight)}`);
    }
    this.link = new Link(options.redis, positive("timeoutMs", options.timeoutMs, DEFAULTS.timeoutMs, false), retries, maxInFlight);
    this.prefix = options.prefix ?? DEFAULTS.prefix;
    this.clock = (options.clock ?? DEFAULTS.clock) === "redis" ? "r" : "h";
    this.dedupeMs = positive("dedupeMs", options.dedupeMs, DEFAULTS.dedupeMs, true);
  }

  /**
   * Commands sent to Redis that the client has not answered yet (bounded by `maxInFlight`): a gauge
   * for metrics, and what a stalled Redis would pile up.
   *
   * @returns the number of unsettled commands.
   * @example
   * setInterval(() => metrics.gauge("redis.in_flight", store.inFlight), 1_000);
   */
  get inFlight(): number {
    return this.link.inFlight;
  }

  /**
   * Checks and charges one request, all or nothing, in one round trip. When Redis does not answer in
   * `timeoutMs`, the store sends the same call again (`retries`); whichever attempt Redis runs second
   * is answered from the first one's outcome, so a retry never counts twice. A second `charge` call
   * is a second request, whatever its `id`, as with `MemoryStore`.
   *
   * @param request - every budget and the cap of the request, from `createPolicy`.
   * @returns what the store did; `now` is set when `clock` is `"redis"`.
   * @throws RedisTimeoutError, RedisOverloadError (past `maxInFlight`) or the client's error when Redis does not answer: `createPolicy` answers 503.
   * @example
   * const outcome = await store.charge({ id: "req_1", now: Date.now(), budgets: [{ key: "b:1.k:general", limit: 600, windowMs: 60_000 }], refused: false });
   */
  async charge(request: ChargeRequest): Promise<ChargeOutcome> {
    const p = this.prefix;
    const { budgets, idempotency: idem, cap } = request;
    // The memo is named by this call's nonce, never by the request id: a request id can come from a
    // client header, and a client that reuses one must not be answered from another request's charge.
    // Memos live as fields of one hash per store and slot of `dedupeMs`, which expires (2 slots
    // after it opened) as a whole: far cheaper for Redis than a key with its own TTL per call.
    const nonce = String(++this.calls);
    const slot = Math.floor(request.now / this.dedupeMs);
    const keys = [`${p}seq`, `${p}r:${this.instance}:${slot}`, ...budgets.map((b) => p + b.key)];
    if (idem !== undefined) keys.push(p + idem.key);
    if (cap !== undefined) keys.push(p + cap.key);
    const args = [
      this.clock,
      String(request.now),
      nonce,
      String(this.link.retries === 0 ? 0 : 2 * this.dedupeMs),
      String(budgets.length),
      request.refused ? "1" : "0",
      idem?.fingerprint ?? "",
      String(idem?.ttlMs ?? ""),
      String(cap?.day ?? ""),
      String(cap?.limit ?? ""),
      String(cap?.resetAt ?? ""),
      String(cap?.offsetMs ?? 0),
      String(CAP_GRACE_MS),
      String(SEQ_TTL_MS),
      String(EXPIRY_SLACK_MS),
      "", // the deadline, set by the link
    ];
    for (const b of budgets) args.push(String(b.limit), String(b.windowMs));
    return outcomeOf(strings(await this.link.run(CHARGE, "charge", keys, args, CHARGE_TIMED), "charge"));
  }

  /**
   * Uncounts one daily-cap charge and lets its idempotency key count again; idempotent.
   *
   * @param ticket - `decision.release` of an allowed send, schedule or test send.
   * @param now - the host's clock (ms); ignored when `clock` is `"redis"`.
   * @returns true when the charge was still counted.
   * @example
   * if (decision.release) await store.release(decision.release, Date.now());
   */
  async release(ticket: ReleaseTicket, now: number): Promise<boolean> {
    const base = this.prefix + ticket.key;
    const keys = [`${base}:${ticket.day}`, `${base}:day`];
    if (ticket.idempotencyKey !== undefined) keys.push(this.prefix + ticket.idempotencyKey);
    const reply = await this.link.run(RELEASE, "release", keys, [this.clock, String(now), ticket.member, String(ticket.day)]);
    return Number(reply) === 1;
  }

  /**
   * Reads budgets without charging, in one round trip, for `GET /rate-limit`.
   *
   * @param budgets - the budgets to read.
   * @param now - the host's clock (ms); ignored when `clock` is `"redis"`.
   * @returns one reading per budget: `{ count: 0, resetAt: 0 }` when no window is open.
   * @example
   * const [general] = await store.read([{ key: "b:1.k:general", limit: 600, windowMs: 60_000 }], Date.now());
   */
  async read(budgets: readonly BudgetCharge[], now: number): Promise<WindowReading[]> {
    if (budgets.length === 0) return [];
    const keys = budgets.map((b) => this.prefix + b.key);
    const args = [this.clock, String(now), ...budgets.map((b) => String(b.windowMs))];
    return readings(strings(await this.link.run(READ, "read", keys, args), "read"));
  }
}
