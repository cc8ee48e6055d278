/**
 * One scenario, three ways through: the pure API over a snapshot, createPolicy over MemoryStore, and
 * createPolicy over RedisStore (the shared Redis at 6379, a unique prefix per runner).
 */
import { createPolicy, emptyUsage, evaluate, MemoryStore, reset, type Decision, type Limits, type PolicyOptions, type PolicyRequest, type PolicyStore, type ResetTarget, type Usage, type Who } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { T0 } from "../fixtures.js";
import { ioredisCall, sharedRedis } from "../redis/helpers.js";

export type Way = "evaluate" | "MemoryStore" | "RedisStore";
export const WAYS: readonly Way[] = ["evaluate", "MemoryStore", "RedisStore"];

const { redis, root } = sharedRedis("operating");
let made = 0;

/** A fresh RedisStore on the shared Redis, under a prefix of its own. */
export function redisStore(prefix = `${root}${++made}:`): RedisStore {
  return new RedisStore({ redis: ioredisCall(redis), prefix });
}

/** A prefix of its own on the shared Redis, and the connection, to look at keys. */
export function redisPrefix(): { prefix: string; redis: typeof redis } {
  return { prefix: `${root}${++made}:`, redis };
}

/** A way through with its own counters and a clock the test moves. */
export interface Runner {
  check(request: PolicyRequest, who: Who): Promise<Decision>;
  reset(target: ResetTarget): Promise<void>;
  advance(seconds: number): void;
  readonly now: number;
}

export function runner(way: Way, config?: PolicyOptions, start = T0): Runner {
  let now = start;
  if (way === "evaluate") {
    let usage: Usage = emptyUsage();
    let n = 0;
    return {
      async check(request, who) {
        const req = typeof request === "object" && request !== null ? { requestId: `r${++n}`, ...request } : request;
        const { decision, usage: next } = evaluate(req, { ...who, usage, now, ...(config && { config }) });
        usage = next;
        return decision;
      },
      async reset(target) {
        usage = reset(usage, target, now, config);
      },
      advance: (s) => void (now += s * 1000),
      get now() {
        return now;
      },
    };
  }
  const store: PolicyStore = way === "MemoryStore" ? new MemoryStore() : redisStore();
  let n = 0;
  const policy = createPolicy({ store, clock: () => now, generateId: () => `r${++n}`, ...(config && { config }) });
  return {
    check: (request, who) => policy.check(request, who),
    reset: (target) => policy.reset(target),
    advance: (s) => void (now += s * 1000),
    get now() {
      return now;
    },
  };
}

/** Two plans of a newsletter service. */
export const FREE: Limits = { budgets: { audience: { limit: 3 } }, caps: { dispatch: { limit: 2 }, testSend: { limit: 2 } } };
export const PAID: Limits = { budgets: { audience: { limit: 6 } }, caps: { dispatch: { limit: 4 }, testSend: { limit: 5 } } };
