/**
 * Differential: random traces through `createPolicy` over RedisStore and over MemoryStore, with the
 * same injected clock and ids, give identical decisions, headers, releases and `GET /rate-limit`.
 */
import { afterAll, describe, it } from "vitest";
import { RedisStore } from "../../src/redis/index.js";
import { differentialTraces } from "./differential-trace.js";
import { cleanUp, ioredis, ioredisCall, uniquePrefix } from "./helpers.js";

const redis = ioredis();
const root = uniquePrefix("differential");

afterAll(async () => {
  await cleanUp(redis, root);
  redis.disconnect();
});

describe("RedisStore ≡ MemoryStore through createPolicy (differential, fast-check, fixed seed)", () => {
  it("random traces give identical decisions and headers, releases and status", async () => {
    await differentialTraces("single primary", (run) => new RedisStore({ redis: ioredisCall(redis), prefix: `${root}${run}:` }), 250);
  });
});
