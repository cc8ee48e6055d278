/**
 * The store asks for one function that sends EVALSHA/EVAL. These are the one-line adapters of
 * docs/redis.md for ioredis and node-redis, each at its last two majors (v5 and v6: a new user's
 * `npm install ioredis` or `npm install redis` gets v6), held to MemoryStore on the same requests.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPolicy, MemoryStore, type Decision, type PolicyRequest } from "../../src/index.js";
import { RedisStore, type RedisCall } from "../../src/redis/index.js";
import { plainMembers, T0, get, key, post } from "../fixtures.js";
import { cleanUp, counting, ioredis, ioredis6, ioredisCall, nodeRedis, nodeRedis6, nodeRedisCall, uniquePrefix } from "./helpers.js";

const admin = ioredis();
const root = uniquePrefix("adapters");
const io = ioredis();
const io6 = ioredis6();
let node: Awaited<ReturnType<typeof nodeRedis>>;
let node6: Awaited<ReturnType<typeof nodeRedis6>>;

beforeAll(async () => {
  node = await nodeRedis();
  node6 = await nodeRedis6();
});
afterAll(async () => {
  node.destroy();
  node6.destroy();
  io.disconnect();
  io6.disconnect();
  await cleanUp(admin, root);
  admin.disconnect();
});

const owner = key({ nl_1: { content: "write", audience: "write", sending: "write" } }, true);
const who = { credential: owner, roles: { nl_1: "owner" } };
const config = { budgets: { audience: { limit: 2, window: 30 } }, caps: { dispatch: { limit: 1 } } };
const script: PolicyRequest[] = [
  get("/newsletters/nl_1/subscribers"),
  get("/newsletters/nl_1/subscribers"),
  get("/newsletters/nl_1/subscribers"), // 429 audience
  post("/articles/a_1/send", { newsletter: "nl_1", idempotencyKey: "s-1" }),
  post("/articles/a_1/send", { newsletter: "nl_1", idempotencyKey: "s-1" }), // replay
  post("/articles/a_2/send", { newsletter: "nl_1" }), // 429 daily cap
  post("/articles/a_2/schedule", { newsletter: "nl_1", idempotencyKey: "s-1" }), // 409
];

async function decide(store: RedisStore | MemoryStore): Promise<{ decisions: Decision[]; released: boolean[]; status: unknown }> {
  let now = T0;
  let id = 0;
  const policy = createPolicy({ store, config, clock: () => now, generateId: () => String(++id) });
  const decisions: Decision[] = [];
  for (const request of script) {
    decisions.push(await policy.check(request, who));
    now += 250;
  }
  const send = decisions[3]!;
  const released = [await policy.release(send), await policy.release(send)];
  decisions.push(await policy.check(post("/articles/a_3/send", { newsletter: "nl_1" }), who));
  return { decisions, released, status: await policy.status(owner) };
}

const adapters: Array<[string, () => RedisCall]> = [
  ["ioredis v5: (command, args) => redis.call(command, args)", () => ioredisCall(io)],
  ["node-redis v5: (command, args) => client.sendCommand([command, ...args])", () => nodeRedisCall(node)],
  ["ioredis v6: (command, args) => redis.call(command, args)", () => (command, args) => io6.call(command, args)],
  ["node-redis v6: (command, args) => client.sendCommand([command, ...args])", () => (command, args) => node6.sendCommand([command, ...args])],
];

describe.each(adapters)("adapter %s", (name, adapter) => {
  it("decides as MemoryStore does, one round trip per decision", async () => {
    const call = counting(adapter());
    const prefix = `${root}${name.slice(0, name.indexOf(":"))}:`;
    const actual = await decide(new RedisStore({ redis: call, prefix }));
    const expected = await decide(new MemoryStore());
    expect(actual).toEqual(plainMembers(expected));
    expect(expected.decisions.map((d) => d.status)).toEqual([200, 200, 429, 200, 200, 429, 409, 200]);
    expect(expected.released).toEqual([true, false]);
    // 8 checks + 2 releases + 1 status; an extra EVAL only when the script cache was empty
    expect(call.commands.filter((c) => c === "EVALSHA")).toHaveLength(11);
    expect(call.calls - 11).toBe(call.commands.filter((c) => c === "EVAL").length);
  });

  it("rejects EVALSHA of an unknown script with a NOSCRIPT error the store recognises, then EVAL works", async () => {
    const call = adapter();
    await expect(call("EVALSHA", ["0".repeat(40), "0"])).rejects.toThrow(/^NOSCRIPT/);
    expect(await call("EVAL", ["return {'a', 1}", "0"])).toEqual(["a", 1]);
  });

  it("survives SCRIPT FLUSH between decisions", async () => {
    const store = new RedisStore({ redis: adapter(), prefix: `${root}${name.slice(0, name.indexOf(":"))}-flush:` });
    const policy = createPolicy({ store, clock: () => T0 });
    expect((await policy.check(get("/me"), who)).status).toBe(200);
    await admin.script("FLUSH");
    expect((await policy.check(get("/me"), who)).status).toBe(200);
    expect((await policy.status(owner)).budgets.general!.remaining).toBe(598);
  });
});
