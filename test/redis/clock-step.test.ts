/**
 * Issue 8, defect 1, on Redis with the host's clock: a window stamped after `now` (the host clock
 * stepped back) starts now, so Retry-After and RateLimit-Reset are never longer than the window —
 * in the charge script and in the read script (`GET /rate-limit`), as in MemoryStore and `evaluate`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createPolicy } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { get, key } from "../fixtures.js";
import { cleanUp, ioredis, ioredisCall, uniquePrefix } from "./helpers.js";

const redis = ioredis();
const prefix = uniquePrefix("clock-step");
afterAll(async () => {
  await cleanUp(redis, prefix);
  redis.disconnect();
});

describe("issue 8 defect 1 on Redis (clock: host)", () => {
  it("a clock stepped back one hour inside a window: Retry-After and RateLimit-Reset never longer than the window, nor the status() reset", async () => {
    let now = Date.UTC(2026, 10, 23, 10);
    const credential = key({}, false, "key_clock");
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix, clock: "host" }), clock: () => now });
    for (let i = 0; i < 600; i++) expect((await policy.check(get("/rate-limit"), { credential, roles: {} })).allowed).toBe(true);
    now -= 3600_000;
    const refused = await policy.check(get("/rate-limit"), { credential, roles: {} });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["Retry-After"])).toBeGreaterThan(0);
    expect(Number(refused.headers["Retry-After"])).toBeLessThanOrEqual(60);
    expect(Number(refused.headers["RateLimit-Reset"])).toBeLessThanOrEqual(60);
    const status = await policy.status(credential);
    expect(status.budgets.general!.reset).toBeLessThanOrEqual(60);
    expect(status.budgets.general!.remaining).toBe(0);
  });
});
