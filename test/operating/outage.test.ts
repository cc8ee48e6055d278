/**
 * A Redis outage with an insurance store, on a redis-server of this test's own (port 6400, stopped
 * by PID): traffic flows through RedisStore; Redis is killed → the insurance store decides
 * (degraded, limits × share); Redis is started again → the main store decides again.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createPolicy, MemoryStore, type Decision } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { get, key } from "../fixtures.js";
import { startRedis, type OwnRedis } from "./redis-server.js";

const PORT = 6400;
const credential = key({ nl_1: { audience: "read" } }, false, "key_outage");
const who = { credential, roles: { nl_1: "owner" } };
const subscribers = get("/newsletters/nl_1/subscribers");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: OwnRedis | undefined;
const client = new Redis({ port: PORT, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
client.on("error", () => {}); // connection errors are what this test is about; the store reports them as rejections

afterAll(async () => {
  client.disconnect();
  await server?.stop();
});

describe("Redis outage with an insurance store (own redis-server on port 6400)", () => {
  it("RedisStore decides; Redis killed → degraded decisions with limits × share; Redis back → handed back", async () => {
    server = await startRedis(PORT);
    await client.connect();
    const policy = createPolicy({
      store: new RedisStore({ redis: (command, args) => client.call(command, args), prefix: "outage:", timeoutMs: 1000, retries: 0 }),
      insurance: { store: new MemoryStore(), share: 0.5 },
    });
    const run = async (n: number): Promise<Decision[]> => {
      const out: Decision[] = [];
      for (let i = 0; i < n; i++) out.push(await policy.check(subscribers, who));
      return out;
    };

    const before = await run(5);
    expect(before.map((d) => [d.allowed, d.degraded ?? false])).toEqual(Array(5).fill([true, false]));
    expect(before[4]!.headers).toMatchObject({ "RateLimit-Limit": "60", "RateLimit-Remaining": "55" });

    await server.stop(); // SIGKILL by PID
    const during = await run(40);
    expect(during.every((d) => d.degraded === true)).toBe(true);
    expect(during[0]!.headers["RateLimit-Policy"]).toBe('"general";q=300;w=60, "audience";q=30;w=60');
    // never more than the share: 30 audience requests per window in this process
    expect(during.filter((d) => d.allowed)).toHaveLength(30);
    expect(during[30]).toMatchObject({ status: 429, reason: { rule: "budget_spent", budget: "audience" } });

    server = await startRedis(PORT);
    let back: Decision | undefined;
    for (let i = 0; i < 200 && back === undefined; i++) {
      const d = await policy.check(subscribers, who);
      if (d.degraded === undefined) back = d;
      else await sleep(100);
    }
    expect(back, "the main store decides again once Redis is back").toBeDefined();
    // the restarted Redis kept nothing (no persistence): its count starts again
    expect(back!.headers).toMatchObject({ "RateLimit-Limit": "60", "RateLimit-Remaining": "59" });
    const after = await run(3);
    expect(after.every((d) => d.degraded === undefined && d.allowed)).toBe(true);
  });
});
