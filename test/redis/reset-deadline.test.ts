/**
 * The RESET script's deadline (scripts/reset.ts), each rule pinned by a test that a mutant of it
 * fails (found by a mutation review): the deadline is checked before the retry mark is set, a resend
 * that finds its mark answers done, and the reply carries Redis's time (a store that only resets
 * learns the offset from it, so its later resets carry a deadline).
 */
import { afterAll, expect, it } from "vitest";
import { createPolicy, type Who } from "../../src/index.js";
import { RedisStore, type RedisCall } from "../../src/redis/index.js";
import { RESET } from "../../src/redis/scripts/reset.js";
import { T0, get, key } from "../fixtures.js";
import { cleanUp, ioredis, ioredisCall } from "./helpers.js";

const redis = ioredis();
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await cleanUp(redis, p);
  redis.disconnect();
});
const alice = key({ nl_1: { audience: "read" } }, true, "key_probe");
const who: Who = { credential: alice, roles: { nl_1: "owner" }, limits: { budgets: { audience: { limit: 2 } } } };
const read = get("/newsletters/nl_1/subscribers");

it("a reset whose first send comes back past its deadline is sent again and clears (Redis's clock stepped forward)", async () => {
  const prefix = `reset-deadline:${process.pid}:a:`;
  prefixes.push(prefix);
  const real = ioredisCall(redis);
  let tampered = false;
  const call: RedisCall = (command, args) => {
    if (!tampered && args[0] === RESET.sha) {
      tampered = true;
      const copy = args.slice();
      copy[2 + Number(args[1]) + 7] = "1"; // a deadline long past
      return real(command, copy);
    }
    return real(command, args);
  };
  const policy = createPolicy({ store: new RedisStore({ redis: call, prefix }), clock: () => T0 });
  for (let i = 0; i < 2; i++) expect((await policy.check(read, who)).status).toBe(200);
  expect((await policy.check(read, who)).status).toBe(429);
  await policy.reset({ credential: alice });
  expect(tampered).toBe(true);
  expect((await policy.check(read, who)).status).toBe(200);
});

it("a reset that ran but whose reply was lost: the store's retry finds its mark and the reset succeeds", async () => {
  const prefix = `reset-deadline:${process.pid}:b:`;
  prefixes.push(prefix);
  const real = ioredisCall(redis);
  let lost = false;
  const call: RedisCall = (command, args) => {
    if (!lost && args[0] === RESET.sha) {
      lost = true;
      void real(command, args);
      return new Promise(() => {}); // the reply never comes
    }
    return real(command, args);
  };
  const policy = createPolicy({ store: new RedisStore({ redis: call, prefix, timeoutMs: 150, retries: 1 }), clock: () => T0 });
  for (let i = 0; i < 2; i++) expect((await policy.check(read, who)).status).toBe(200);
  await expect(policy.reset({ credential: alice })).resolves.not.toThrow();
  expect(lost).toBe(true);
  expect((await policy.check(read, who)).status).toBe(200);
});

it("a store that only resets learns Redis's clock from the first reset's reply: the second carries a deadline", async () => {
  const prefix = `reset-deadline:${process.pid}:c:`;
  prefixes.push(prefix);
  const real = ioredisCall(redis);
  const deadlines: string[] = [];
  const call: RedisCall = (command, args) => {
    if (args[0] === RESET.sha) deadlines.push(args[2 + Number(args[1]) + 7]!);
    return real(command, args);
  };
  const policy = createPolicy({ store: new RedisStore({ redis: call, prefix }), clock: () => T0 });
  await policy.reset({ credential: alice });
  await policy.reset({ credential: alice });
  expect(deadlines[0]).toBe("");
  expect(deadlines[1]).toMatch(/^\d+(\.\d+)?$/);
});
