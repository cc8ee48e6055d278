/**
 * RedisStore runs the store conformance suite of `newsletter-policy/testing`: scripted cases of the
 * store contract and differential properties against MemoryStore, on the real Redis.
 */
import { afterAll } from "vitest";
import { RedisStore } from "../../src/redis/index.js";
import { describeStoreConformance } from "../../src/testing/index.js";
import { cleanUp, ioredis, ioredisCall, uniquePrefix } from "./helpers.js";

const redis = ioredis();
const root = uniquePrefix("conformance");
const prefixes = new WeakMap<RedisStore, string>();
let made = 0;

afterAll(async () => {
  await cleanUp(redis, root);
  redis.disconnect();
});

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
