/**
 * Counters in Redis, shared by every server process: one Lua script per decision checks every
 * budget and the daily cap of a request and charges them all or none (DESIGN §2), in one round trip.
 * The scripts, with the encoder of their KEYS/ARGV and the decoder of their replies, are in
 * `scripts/`; the cluster's two-step charge in cluster-charge.ts.
 */
import type { BudgetCharge, ChargeOutcome, ChargeRequest, PolicyStore, RecordTicket, WindowReading } from "../store.js";
import type { ReleaseTicket } from "../types.js";
import type { ResetRequest } from "../store.js";
import { Batcher } from "./batcher.js";
import { Link } from "./client.js";
import { chargeOnCluster, type ClusterContext } from "./cluster-charge.js";
import { bySlot, capSlotTag, credentialTag, isNewsletterTag, memoKey, redisKey } from "./key-layout.js";
import { storeSettings, type RedisStoreOptions } from "./options.js";
import { CLUSTER_RELEASE, clusterReleaseCall, decodeClusterRelease } from "./scripts/cluster-release.js";
import { decodeRead, READ, readCall } from "./scripts/read.js";
import { decodeRelease, RELEASE, releaseCall } from "./scripts/release.js";
import { decodeForget, FORGET, forgetCall } from "./scripts/forget.js";
import { RESET, RESET_TIMED, resetCall } from "./scripts/reset.js";

export type { RedisStoreOptions } from "./options.js";

/**
 * A {@link PolicyStore} in Redis, for many server processes sharing one set of budgets and caps.
 * Every decision is one Lua script (`EVALSHA`, falling back to `EVAL` after a restart or
 * `SCRIPT FLUSH`), and the charges handed over in one turn of the event loop share one round trip
 * (`batch`); every key expires with its window, day or idempotency record.
 *
 * @param options - `redis` (required: sends `EVALSHA`/`EVAL`), `prefix` (default `"np:"`), `clock`
 *   (default `"host"`), `timeoutMs` (default 500), `retries` on timeout (default 1), `dedupeMs`
 *   (default 30 000), `maxInFlight` (default 1 000), `batch` (charges per round trip, default 16).
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
  private readonly batcher: Batcher;
  private readonly prefix: string;
  private readonly clock: "h" | "r";
  private readonly dedupeMs: number;
  private readonly cluster: boolean;
  /** How long a charge's memo lives (ms): 0 writes none (no retries, nothing to remember). */
  private readonly memoTtlMs: number;
  /** A store key as a single primary names it (the prefix; no hash tag). */
  private readonly plainKey = (key: string): string => this.key(key, "");
  /** What a charge on Redis Cluster needs of this store. */
  private readonly clusterContext: ClusterContext;
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
    const settings = storeSettings(options);
    this.link = new Link(settings.redis, settings.timeoutMs, settings.retries, settings.maxInFlight);
    this.prefix = settings.prefix;
    this.clock = settings.clock;
    this.dedupeMs = settings.dedupeMs;
    this.cluster = settings.cluster;
    this.memoTtlMs = settings.retries === 0 ? 0 : 2 * settings.dedupeMs;
    this.batcher = new Batcher(this.link, settings.batch);
    this.clusterContext = { link: this.link, instance: this.instance, key: (key, tag) => this.key(key, tag) };
  }

  /**
   * Calls sent to Redis that the client has not answered yet (bounded by `maxInFlight`; a batch
   * counts each charge it carries): a gauge for metrics, and what a stalled Redis would pile up.
   *
   * @returns the number of unsettled calls.
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
    // The memo is named by this call's nonce, never by the request id: a request id can come from a
    // client header, and a client that reuses one must not be answered from another request's charge.
    // Memos live as fields of one hash per store and slot of `dedupeMs`, which expires (2 slots
    // after it opened) as a whole: far cheaper for Redis than a key with its own TTL per call.
    const nonce = String(++this.calls);
    const memo = memoKey(this.instance, Math.floor(request.now / this.dedupeMs));
    // a charge Redis made after this store gave up on it is handed to the policy (ChargeRequest.late)
    const late = request.late;
    if (this.cluster) return chargeOnCluster(this.clusterContext, request, { clock: this.clock, nonce, memoTtlMs: this.memoTtlMs, memo, late });
    const { now, refused, budgets, idempotency, cap } = request;
    return this.batcher.charge({ clock: this.clock, nonce, memoTtlMs: this.memoTtlMs, memo, now, refused, budgets, idempotency, cap, key: this.plainKey }, late);
  }

  /** A key in Redis: the prefix, the hash tag with a cluster, the store key. */
  private key(key: string, tag: string): string {
    return redisKey(this.prefix, this.cluster, key, tag);
  }

  /**
   * Uncounts one daily-cap charge and lets its idempotency key count again; idempotent.
   *
   * @param ticket - `decision.release` of an allowed send, schedule or test send.
   * @param now - ms since the epoch (the PolicyStore signature; a release is the same at any time).
   * @returns true when the charge was still counted.
   * @example
   * if (decision.release) await store.release(decision.release, Date.now());
   */
  async release(ticket: ReleaseTicket, now: number): Promise<boolean> {
    const tag = this.cluster ? capSlotTag(ticket.key) : "";
    const key = (storeKey: string) => this.key(storeKey, tag);
    if (this.cluster && isNewsletterTag(tag)) {
      // the dispatch cap's slot only: a key whose member is no longer counted counts again
      const { keys, args } = clusterReleaseCall(ticket, key);
      return decodeClusterRelease(await this.link.run(CLUSTER_RELEASE, "release", keys, args));
    }
    const { keys, args } = releaseCall(ticket, key);
    return decodeRelease(await this.link.run(RELEASE, "release", keys, args));
  }

  /**
   * Forgets an idempotency record, but only the one a charge wrote (same fingerprint and end, no cap
   * charge in it), in one round trip (a Lua script, see `scripts/forget.ts`): `createPolicy` calls
   * it for a keyed write Redis ran after the store gave up on it (its reply read too late), so that
   * the retry runs instead of being answered as a replay of a write the host never made.
   *
   * @param record - the key, fingerprint, end and scope of the record one charge wrote.
   * @param now - ms since the epoch (the PolicyStore signature).
   * @returns true when the record was that one, and is gone.
   * @example
   * await store.forget({ key: "k:5.key_1:k1", fingerprint: "…", expiresAt: Date.now() + 86_400_000 }, Date.now());
   */
  async forget(record: RecordTicket, now: number): Promise<boolean> {
    const tag = this.cluster ? credentialTag([record.key]) : "";
    const { keys, args } = forgetCall(record, (storeKey) => this.key(storeKey, tag));
    return decodeForget(await this.link.run(FORGET, "forget", keys, args));
  }

  /**
   * Clears exactly what the request names, in one round trip (a Lua script, see `scripts/reset.ts`):
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
        if (part.windows.length === 0 && part.caps.length === 0 && part.idempotencyScope === undefined) return undefined;
        // each call marked by a nonce of its own: the store's retry of it clears nothing a second time
        const mark = { key: `rm:${this.instance}:${++this.calls}`, ttlMs: this.memoTtlMs };
        const { keys, args } = resetCall((key) => this.key(key, tag), this.clock, part, now, this.cluster, mark);
        return this.link.run(RESET, "reset", keys, args, RESET_TIMED);
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
    const { keys, args } = readCall(budgets, this.clock, now, (key) => this.key(key, tag));
    return decodeRead(await this.link.run(READ, "read", keys, args));
  }
}
