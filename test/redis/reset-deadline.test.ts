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

/** Where RESET's deadline sits in an EVALSHA's arguments (sha, key count, keys, then ARGV 8). */
const deadlineAt = (args: readonly string[]) => 2 + Number(args[1]) + 7;

/**
 * A policy over a RedisStore of its own prefix whose calls go to the shared Redis, a RESET call
 * handed first to `onReset`: what it answers is the call's reply, undefined sends it on as it is.
 */
function policyOver(name: string, onReset: (args: string[], send: (args: string[]) => Promise<unknown>) => Promise<unknown> | undefined, options: { timeoutMs?: number; retries?: number } = {}) {
  const prefix = `reset-deadline:${process.pid}:${name}:`;
  prefixes.push(prefix);
  const real = ioredisCall(redis);
  const call: RedisCall = (command, args) => (args[0] === RESET.sha ? onReset(args, (a) => real(command, a)) : undefined) ?? real(command, args);
  return createPolicy({ store: new RedisStore({ redis: call, prefix, ...options }), clock: () => T0 });
}


it("a reset whose first send comes back past its deadline is sent again and clears (Redis's clock stepped forward)", async () => {
  let tampered = false;
  const policy = policyOver("a", (args, send) => {
    if (tampered) return undefined;
    tampered = true;
    const copy = args.slice();
    copy[deadlineAt(args)] = "1"; // a deadline long past
    return send(copy);
  });
  for (let i = 0; i < 2; i++) expect((await policy.check(read, who)).status).toBe(200);
  expect((await policy.check(read, who)).status).toBe(429);
  await policy.reset({ credential: alice });
  expect(tampered).toBe(true);
  expect((await policy.check(read, who)).status).toBe(200);
});

it("a reset that ran but whose reply was lost: the store's retry finds its mark and the reset succeeds", async () => {
  let lost = false;
  const policy = policyOver(
    "b",
    (args, send) => {
      if (lost) return undefined;
      lost = true;
      void send(args);
      return new Promise(() => {}); // the reply never comes
    },
    { timeoutMs: 150, retries: 1 },
  );
  for (let i = 0; i < 2; i++) expect((await policy.check(read, who)).status).toBe(200);
  await policy.reset({ credential: alice });
  expect(lost).toBe(true);
  expect((await policy.check(read, who)).status).toBe(200);
});

it("a store that only resets learns Redis's clock from the first reset's reply: the second carries a deadline", async () => {
  const deadlines: string[] = [];
  const policy = policyOver("c", (args) => {
    deadlines.push(args[deadlineAt(args)]!);
    return undefined;
  });
  await policy.reset({ credential: alice });
  await policy.reset({ credential: alice });
  expect(deadlines[0]).toBe("");
  expect(deadlines[1]).toMatch(/^\d+(\.\d+)?$/);
});
