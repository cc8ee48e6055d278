/**
 * Differential: random traces through `createPolicy` over RedisStore and over MemoryStore, with the
 * same injected clock and ids, give identical decisions, headers, releases and `GET /rate-limit`.
 */
import { describe, it } from "vitest";
import { RedisStore } from "../../src/redis/index.js";
import { differentialTraces } from "./differential-trace.js";
import { ioredisCall, sharedRedis } from "./helpers.js";

const { redis, root } = sharedRedis("differential");

describe("RedisStore ≡ MemoryStore through createPolicy (differential, fast-check, fixed seed)", () => {
  it("random traces give identical decisions and headers, releases and status", async () => {
    await differentialTraces("single primary", (run) => new RedisStore({ redis: ioredisCall(redis), prefix: `${root}${run}:` }), 250);
  });
});
