/**
 * Many processes, one set of budgets: 8 separate connections (4 ioredis, 4 node-redis), each with
 * its own RedisStore and policy as a server process would have, fire 16 000 requests at a budget of
 * 50 and at a daily dispatch cap of 25 (with and without retried Idempotency-Keys), then 4 000 sends that
 * charge two budgets and the cap at once while SCRIPT FLUSH runs every few ms. Never more than the limit is admitted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPolicy, type Decision, type Policy, type PolicyOptions } from "../../src/index.js";
import { RedisStore, type RedisCall } from "../../src/redis/index.js";
import { key, post } from "../fixtures.js";
import { cleanUp, ioredis, ioredisCall, nodeRedis, nodeRedisCall, uniquePrefix } from "./helpers.js";

const CONNECTIONS = 8;
const IN_FLIGHT_PER_CONNECTION = 16;
const PER_TEST = 6_000;

const admin = ioredis();
const prefix = uniquePrefix("concurrency");
const closers: Array<() => unknown> = [];
const calls: RedisCall[] = [];

beforeAll(async () => {
  for (let i = 0; i < CONNECTIONS; i++) {
    if (i % 2 === 0) {
      const r = ioredis();
      closers.push(() => r.disconnect());
      calls.push(ioredisCall(r));
    } else {
      const c = await nodeRedis();
      closers.push(() => c.destroy());
      calls.push(nodeRedisCall(c));
    }
  }
});

afterAll(async () => {
  for (const close of closers) await close();
  await cleanUp(admin, prefix);
  admin.disconnect();
});

/** One policy per connection, as separate server processes would each have. */
function processes(config: PolicyOptions): Policy[] {
  return calls.map((call) => createPolicy({ store: new RedisStore({ redis: call, prefix }), config }));
}

/** Fires `total` requests through the processes, round-robin, with many in flight on each. */
async function fire(policies: Policy[], total: number, make: (i: number) => Parameters<Policy["check"]>): Promise<Decision[]> {
  const decisions: Decision[] = [];
  let next = 0;
  const worker = async (policy: Policy) => {
    for (let i = next++; i < total; i = next++) decisions.push(await policy.check(...make(i)));
  };
  await Promise.all(policies.flatMap((p) => Array.from({ length: IN_FLIGHT_PER_CONNECTION }, () => worker(p))));
  return decisions;
}

function tally(decisions: Decision[]): Record<number, number> {
  const by: Record<number, number> = {};
  for (const d of decisions) by[d.status] = (by[d.status] ?? 0) + 1;
  return by;
}

describe(`concurrency: ${CONNECTIONS} connections, ${2 * PER_TEST + 8_000} requests, never more admitted than the limit`, () => {
  it("spec §8 budget: general limit 50 per window, one credential, 6 000 requests from 8 processes → exactly 50 admitted", async () => {
    const credential = key({}, true, `key_budget`);
    const policies = processes({ budgets: { general: { limit: 50, window: 3_600 } } });
    const decisions = await fire(policies, PER_TEST, () => [{ method: "GET", path: "/me" }, { credential, roles: {} }]);
    const by = tally(decisions);
    console.log(`budget (limit 50): ${decisions.length} requests, admitted ${by[200] ?? 0}, refused 429 ${by[429] ?? 0}, other ${JSON.stringify(by)}`);
    expect(decisions).toHaveLength(PER_TEST);
    expect(by[200]).toBe(50);
    expect(by[429]).toBe(PER_TEST - 50);
    expect((await policies[0]!.status(credential)).budgets.general).toMatchObject({ limit: 50, remaining: 0 });
  });

  it("spec §8 daily dispatch cap 25 per newsletter across credentials, 6 000 sends from 40 credentials on 8 processes → exactly 25 admitted", async () => {
    const credentials = Array.from({ length: 40 }, (_, i) => key({ nl_1: { sending: "write" } }, false, `key_send_${i}`));
    const policies = processes({ caps: { dispatch: { limit: 25 } }, budgets: { general: { limit: 100_000, window: 3_600 }, write: { limit: 100_000, window: 3_600 } } });
    const decisions = await fire(policies, PER_TEST, (i) => [post(`/articles/a_${i}/send`, { newsletter: "nl_1" }), { credential: credentials[i % 40]!, roles: { nl_1: "owner" } }]);
    const by = tally(decisions);
    const capRefusals = decisions.filter((d) => d.reason.rule === "daily_cap").length;
    console.log(`dispatch cap (limit 25): ${decisions.length} requests, admitted ${by[200] ?? 0}, refused by the daily cap ${capRefusals}, other ${JSON.stringify(by)}`);
    expect(by[200]).toBe(25);
    expect(capRefusals).toBe(PER_TEST - 25);
    // every admitted send holds its own member of the day's set
    const members = new Set(decisions.flatMap((d) => (d.release ? [d.release.member] : [])));
    expect(members.size).toBe(25);
    const day = decisions.find((d) => d.release)!.release!.day;
    expect(await admin.scard(`${prefix}d:4.nl_1:${day}`)).toBe(25);
  });

  it("DESIGN §7 retried sends with the same Idempotency-Key, in parallel: 100 keys × 40 tries → exactly 25 keys count, each once", async () => {
    const credential = key({ nl_2: { sending: "write" } }, false, "key_retry");
    const policies = processes({ caps: { dispatch: { limit: 25 } }, budgets: { general: { limit: 100_000, window: 3_600 }, write: { limit: 100_000, window: 3_600 } } });
    const decisions = await fire(policies, 4_000, (i) => [post(`/articles/a_${i % 100}/send`, { newsletter: "nl_2", idempotencyKey: `send-${i % 100}` }), { credential, roles: { nl_2: "owner" } }]);
    const counted = decisions.filter((d) => d.release !== undefined);
    console.log(`idempotent retries (cap 25): ${decisions.length} requests, counted ${counted.length}, replays ${decisions.filter((d) => d.allowed && d.release === undefined).length}, refused by the cap ${decisions.filter((d) => d.reason.rule === "daily_cap").length}`);
    expect(counted).toHaveLength(25);
    const countedKeys = new Set(counted.map((d) => d.release!.idempotencyKey));
    expect(countedKeys.size).toBe(25);
    expect(await admin.scard(`${prefix}d:4.nl_2:${counted[0]!.release!.day}`)).toBe(25);
    // every other admitted request is a replay of a key that already counted
    for (const d of decisions) if (d.allowed && d.release === undefined) expect(d.reason).toEqual({ rule: "allowed", replay: true });
    expect(decisions.filter((d) => d.allowed).length).toBe(40 * 25);
  });

  it("spec §8 budgets and the daily cap in one request, with SCRIPT FLUSH every few ms: 4 000 sends, write budget 10 for each of 4 credentials, dispatch cap 25 → exactly 25 admitted, 15 refused by the cap, none failed", async () => {
    // nl_both: a newsletter of its own (the test above filled today's cap of nl_1)
    const credentials = Array.from({ length: 4 }, (_, i) => key({ nl_both: { sending: "write" } }, false, `key_both_${i}`));
    const policies = processes({ caps: { dispatch: { limit: 25 } }, budgets: { write: { limit: 10, window: 3_600 } } });
    let flushing = true;
    let flushes = 0;
    const flusher = (async () => {
      while (flushing) {
        await admin.script("FLUSH");
        flushes++;
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
    })();
    const decisions = await fire(policies, 4_000, (i) => [post(`/articles/a_${i}/send`, { newsletter: "nl_both" }), { credential: credentials[i % 4]!, roles: { nl_both: "owner" } }]);
    flushing = false;
    await flusher;
    const rules = decisions.reduce<Record<string, number>>((by, d) => ({ ...by, [d.reason.rule]: (by[d.reason.rule] ?? 0) + 1 }), {});
    console.log(`budgets + cap with ${flushes} SCRIPT FLUSHes: ${decisions.length} requests, ${JSON.stringify(rules)}`);
    expect(flushes).toBeGreaterThan(5);
    expect(rules.store_unavailable).toBeUndefined();
    // every request that passed the budgets charged them (10 per credential, 40 in all): the first 25 of
    // those were admitted, the other 15 refused by the cap; the rest were refused by a spent budget
    expect(rules.allowed).toBe(25);
    expect(rules.daily_cap).toBe(15);
    expect(rules.budget_spent).toBe(4_000 - 40);
    for (const credential of credentials) expect((await policies[0]!.status(credential)).budgets.write).toMatchObject({ limit: 10, remaining: 0 });
  });
});
