/**
 * Counters in Redis, shared by every server process: one Lua script per decision checks every
 * budget and the daily cap of a request and charges them all or none (DESIGN §2), in one round trip.
 */
import { PolicyConfigError } from "../errors.js";
import type { BudgetCharge, ChargeOutcome, ChargeRequest, PolicyStore, WindowReading } from "../store.js";
import type { ReleaseTicket } from "../types.js";
import { Link, type RedisCall, type Timed } from "./client.js";
import { CHARGE, CLUSTER_COUNTED, CLUSTER_RELEASE, CLUSTER_STEP1, CLUSTER_STEP2, CLUSTER_UNDO, READ, RELEASE } from "./scripts.js";
import { IDEMPOTENCY_TTL_MS } from "../store.js";
import { indexKey, RESET, resetCall } from "./reset.js";
import type { ResetRequest } from "../reset.js";

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
  /**
   * Redis Cluster: keys carry hash tags (a credential's budgets, test-send cap and idempotency
   * records in the credential's slot; a newsletter's dispatch cap in the newsletter's slot), and a
   * send or schedule takes two round trips (see docs/redis.md, "Redis Cluster"). `redis` must
   * route each command by its first key: `(command, args) => cluster.call(command, args)` with
   * ioredis. Default false.
   */
  cluster?: boolean;
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

/** Step 2's replies carry Redis's time at index 1, and `e` past the deadline (argument 0). */

/**
 * The id of a store key built by `keys.ts` (`<kind>:<length>.<id>…`), or undefined for a key of
 * another shape.
 */
function scopedId(key: string, kinds: string): string | undefined {
  const match = /^([a-z]):(\d{1,6})\./.exec(key);
  if (match === null || !kinds.includes(match[1]!)) return undefined;
  const length = Number(match[2]);
  const start = match[0].length;
  if (key.length < start + length) return undefined;
  return `${length}.${key.slice(start, start + length)}`;
}

/**
 * The hash tag of a credential's keys: its budgets (`b:`), idempotency records (`k:`) and test-send
 * cap (`t:`) share one slot. Keys of another shape (a host's own store tests) share the tag `_`.
 */
function credentialTag(keys: readonly string[]): string {
  let tag: string | undefined;
  for (const key of keys) {
    const id = scopedId(key, "bk");
    const next = id === undefined ? "_" : `c${id}`;
    if (tag !== undefined && tag !== next) throw new Error(`newsletter-policy/redis: one request's keys name two credentials (${keys.join(", ")}); with cluster: true they must share a slot`);
    tag = next;
  }
  return tag ?? "_";
}

/**
 * The hash tag of a daily cap: a credential's test-send cap (`t:`) sits in the credential's slot,
 * a newsletter's dispatch cap (`d:`) in the newsletter's; a cap key of another shape in its own.
 */
function capSlotTag(key: string): string {
  const credential = scopedId(key, "t");
  if (credential !== undefined) return `c${credential}`;
  const newsletter = scopedId(key, "d");
  return newsletter === undefined ? `n:${key}` : `n${newsletter}`;
}

/**
 * A reset split by hash slot. What `policy.reset` asks for always lies in one slot (a credential's
 * windows, test-send cap and idempotency index; or a newsletter's dispatch cap): one round trip.
 * Keys of other shapes (a host's own store tests) may span slots: one script per slot.
 */
function bySlot(request: ResetRequest): Map<string, ResetRequest> {
  const parts = new Map<string, { windows: string[]; caps: ResetRequest["caps"][number][]; idempotencyScope?: string }>();
  const part = (tag: string) => {
    let p = parts.get(tag);
    if (p === undefined) parts.set(tag, (p = { windows: [], caps: [] }));
    return p;
  };
  for (const key of request.windows) part(credentialTag([key])).windows.push(key);
  for (const cap of request.caps) part(capSlotTag(cap.key)).caps.push(cap);
  // the index and the records sit where the charge put them: in the slot of the records' keys
  if (request.idempotencyScope !== undefined) part(credentialTag([`${request.idempotencyScope}:`])).idempotencyScope = request.idempotencyScope;
  return parts;
}

/** The charge script's deadline argument (0-based in ARGV) and how its replies carry Redis's time. */
const CHARGE_TIMED: Timed = {
  deadlineArg: 15,
  timeOf: (reply) => (Array.isArray(reply) ? Number(reply[1]) : undefined),
  expired: (reply) => Array.isArray(reply) && String(reply[0]) === "e",
};
/** Step 2's replies carry Redis's time at index 1 too, and its deadline is argument 0. */
const STEP2_TIMED: Timed = { ...CHARGE_TIMED, deadlineArg: 0 };

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
  private readonly cluster: boolean;
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
    if (options.cluster !== undefined && typeof options.cluster !== "boolean") throw new PolicyConfigError("cluster", `must be true or false; got ${String(options.cluster)}`);
    this.cluster = options.cluster === true;
    if (this.cluster && /[{}]/.test(this.prefix)) {
      throw new PolicyConfigError("prefix", "must not hold { or } with cluster: true (the store's hash tags decide each key's slot)");
    }
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
    const { budgets, idempotency: idem, cap } = request;
    // The memo is named by this call's nonce, never by the request id: a request id can come from a
    // client header, and a client that reuses one must not be answered from another request's charge.
    // Memos live as fields of one hash per store and slot of `dedupeMs`, which expires (2 slots
    // after it opened) as a whole: far cheaper for Redis than a key with its own TTL per call.
    const nonce = String(++this.calls);
    const slot = Math.floor(request.now / this.dedupeMs);
    const memoTtl = String(this.link.retries === 0 ? 0 : 2 * this.dedupeMs);
    // with a cluster, a refused request touches its budgets only: leave the other keys out of its slot
    const idemUsed = request.refused && this.cluster ? undefined : idem;
    const capUsed = request.refused && this.cluster ? undefined : cap;
    const tag = this.cluster ? credentialTag([...budgets.map((b) => b.key), ...(idemUsed ? [idemUsed.key] : [])]) : "";
    // with a cluster, a cap in the credential's slot (the test-send cap) is charged in the same
    // script; another (a newsletter's dispatch cap) takes a second step in its own slot
    const capTag = this.cluster && capUsed !== undefined ? capSlotTag(capUsed.key) : tag;
    const k = (key: string) => this.key(key, tag);
    const keys = [k("seq"), k(`r:${this.instance}:${slot}`), ...budgets.map((b) => k(b.key))];
    if (idemUsed !== undefined) keys.push(k(idemUsed.key));
    const twoSteps = this.cluster && capUsed !== undefined && capTag !== tag;
    if (capUsed !== undefined && !twoSteps) keys.push(k(capUsed.key));
    const member = `${this.instance}.${nonce}`;
    const args = [
      this.clock,
      String(request.now),
      nonce,
      memoTtl,
      String(budgets.length),
      request.refused ? "1" : "0",
      idemUsed?.fingerprint ?? "",
      String(idemUsed?.ttlMs ?? ""),
      String(capUsed?.day ?? ""),
      String(capUsed?.limit ?? ""),
      String(capUsed?.resetAt ?? ""),
      String(capUsed?.offsetMs ?? 0),
      twoSteps ? capUsed.key : String(CAP_GRACE_MS),
      twoSteps ? member : String(SEQ_TTL_MS),
      String(EXPIRY_SLACK_MS),
      "", // the deadline, set by the link
    ];
    for (const b of budgets) args.push(String(b.limit), String(b.windowMs));
    // the credential's index of idempotency records (the last KEY), so that reset finds them in one round trip
    if (idemUsed?.scope !== undefined) {
      keys.push(k(indexKey(idemUsed.scope)));
      args.push("1");
    }
    if (!twoSteps) return outcomeOf(strings(await this.link.run(CHARGE, "charge", keys, args, CHARGE_TIMED), "charge"));

    // Redis Cluster, a send or schedule: step 1 in the credential's slot (budgets, idempotency)
    const first = strings(await this.link.run(CLUSTER_STEP1, "charge (step 1: budgets)", keys, args, CHARGE_TIMED), "charge");
    if (first[0] !== "p") return outcomeOf(first);
    const n = budgets.length;
    const [, , now, replay, chosen] = first;
    const [countedOnDay, fresh, day, resetAt, countedCap] = first.slice(5 + 2 * n);
    let countedOn = countedOnDay!;
    const windows = readings(first.slice(5, 5 + 2 * n));
    const base = now === "" ? { windows } : { windows, now: Number(now) };
    const decidedAt = now === "" ? request.now : Number(now);
    const ttl = Math.max(1, Math.ceil(Number(resetAt) - decidedAt)) + CAP_GRACE_MS + IDEMPOTENCY_TTL_MS;
    if (countedOn !== "" && countedCap !== "" && countedCap !== capUsed!.key) {
      // the key counted toward another newsletter's cap (the same request sent to two newsletters):
      // still counted there, it is a replay; otherwise it counts here. The one case of three round trips.
      const other = capSlotTag(countedCap!);
      const still = await this.link.run(CLUSTER_COUNTED, "charge (the key's other cap)", [this.key(countedCap!, other)], [`${chosen!}#`, countedOn, String(Number(day) - 1), day!]);
      if (Number(still) === 1) return { ...base, kind: "charged", replay: true };
      countedOn = "";
    }
    // step 2 in the newsletter's slot: the dispatch cap
    const ntag = capTag;
    const capKeys = [this.key(`r:${this.instance}:${slot}`, ntag), this.key(capUsed!.key, ntag)];
    // the member added to the set: unique per cap charge; with an Idempotency-Key it starts with the
    // key's own member, so that step 2 finds whether the key still counts
    const added = idemUsed === undefined ? chosen! : `${chosen!}#${this.instance}.${nonce}`;
    const capArgs = ["", nonce, memoTtl, added, countedOn, day!, String(capUsed!.limit), String(ttl), idemUsed === undefined ? "" : `${chosen!}#`];
    const second = strings(await this.link.run(CLUSTER_STEP2, "charge (step 2: dispatch cap)", capKeys, capArgs, STEP2_TIMED), "charge");
    if (second[0] === "r") {
      // only an allowed write records its key: delete the record step 1 made (not awaited: a third
      // command, sent on the credential node's connection before any later command of this store)
      if (fresh === "1" && idemUsed !== undefined) void this.link.run(CLUSTER_UNDO, "undo", [k(idemUsed.key)], [chosen!]).catch(() => {});
      return { ...base, kind: "cap_reached", count: Number(second[2]) };
    }
    if (second[0] !== "c") throw new Error(`newsletter-policy/redis: unexpected reply to charge: ${second.join(" ")}`);
    if (second[2] === "0") return { ...base, kind: "charged", replay: true };
    return { ...base, kind: "charged", replay: replay === "1", member: added };
  }

  /** A key in Redis: the prefix, the hash tag with a cluster, the store key. */
  private key(key: string, tag: string): string {
    return this.cluster ? `${this.prefix}{${tag}}${key}` : this.prefix + key;
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
    if (this.cluster && capSlotTag(ticket.key).startsWith("n")) {
      // the dispatch cap's slot only: a key whose member is no longer counted counts again
      const tag = capSlotTag(ticket.key);
      const keys = [this.key(`${ticket.key}:${ticket.day}`, tag), this.key(`${ticket.key}:day`, tag), this.key(`${ticket.key}:${ticket.day}:r`, tag)];
      return Number(await this.link.run(CLUSTER_RELEASE, "release", keys, [ticket.member, String(ticket.day)])) === 1;
    }
    const tag = this.cluster ? capSlotTag(ticket.key) : "";
    const keys = [this.key(`${ticket.key}:${ticket.day}`, tag), this.key(`${ticket.key}:day`, tag)];
    if (ticket.idempotencyKey !== undefined) keys.push(this.key(ticket.idempotencyKey, tag));
    const reply = await this.link.run(RELEASE, "release", keys, [this.clock, String(now), ticket.member, String(ticket.day)]);
    return Number(reply) === 1;
  }

  /**
   * Clears exactly what the request names, in one round trip (a Lua script, see `reset.ts`):
   * budget windows, one day's daily-cap sets, and the idempotency records of the scope's index.
   * With a cluster every key of one reset shares a slot: a credential's (windows, test-send cap,
   * index and records) or a newsletter's (its dispatch cap).
   *
   * @param request - what to clear (built by `policy.reset`).
   * @param now - the host's clock (ms); with `clock: "redis"` today is Redis's today.
   * @example
   * await policy.reset({ newsletter: "nl_1" }); // calls store.reset(...)
   */
  async reset(request: ResetRequest, now: number): Promise<void> {
    const parts = this.cluster ? bySlot(request) : new Map([["", request]]);
    await Promise.all(
      [...parts].map(([tag, part]) => {
        const { keys, args } = resetCall((key) => this.key(key, tag), this.clock, part, now, this.cluster);
        return keys.length === 0 ? undefined : this.link.run(RESET, "reset", keys, args);
      }),
    );
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
    const tag = this.cluster ? credentialTag(budgets.map((b) => b.key)) : "";
    const keys = budgets.map((b) => this.key(b.key, tag));
    const args = [this.clock, String(now), ...budgets.map((b) => String(b.windowMs))];
    return readings(strings(await this.link.run(READ, "read", keys, args), "read"));
  }
}
