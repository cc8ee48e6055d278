/**
 * RedisStore runs the store conformance suite of `newsletter-policy/testing`: scripted cases of the
 * store contract and differential properties against MemoryStore, on the real Redis.
 */
import { RedisStore } from "../../src/redis/index.js";
import { describeStoreConformance } from "../../src/testing/index.js";
import { cleanUp, ioredis, ioredisCall, sharedRedis } from "./helpers.js";

const { redis, root } = sharedRedis("conformance");
const prefixes = new WeakMap<RedisStore, string>();
let made = 0;

describeStoreConformance(
  "RedisStore (ioredis, host clock)",
  () => {
    const prefix = `${root}${++made}:`;
    const store = new RedisStore({ redis: ioredisCall(redis), prefix });
    prefixes.set(store, prefix);
    return store;
  },
  { cleanup: (store) => cleanUp(redis, prefixes.get(store)!), seed: 20_261_122, numRuns: 40 },
);
