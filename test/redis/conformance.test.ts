/**
 * RedisStore runs the store conformance suite of `newsletter-policy/testing`: scripted cases of the
 * store contract and differential properties against MemoryStore, on the real Redis.
 */
import { RedisStore } from "../../src/redis/index.js";
import { describeStoreConformance } from "../../src/testing/index.js";
import { cleanUp, ioredis, ioredisCall, lateReply, sharedRedis } from "./helpers.js";

const { redis, root } = sharedRedis("conformance");
const prefixes = new WeakMap<RedisStore, string>();
const armed = new WeakMap<RedisStore, ReturnType<typeof lateReply>>();
let made = 0;

describeStoreConformance(
  "RedisStore (ioredis, host clock)",
  () => {
    const prefix = `${root}${++made}:`;
    const store = new RedisStore({ redis: ioredisCall(redis), prefix });
    prefixes.set(store, prefix);
    return store;
  },
  {
    cleanup: (store) => cleanUp(redis, prefixes.get(store)!),
    seed: 20_261_122,
    numRuns: 40,
    // ChargeRequest.late: a store with a 100 ms deadline and no retry, whose armed command Redis runs
    // at once but whose reply is read 400 ms later
    lateReplies: {
      makeStore: () => {
        const prefix = `${root}${++made}:`;
        const call = lateReply(ioredisCall(redis));
        const store = new RedisStore({ redis: call, prefix, timeoutMs: 100, retries: 0 });
        prefixes.set(store, prefix);
        armed.set(store, call);
        return store;
      },
      arm: (store) => armed.get(store)!.arm(400),
    },
  },
);
