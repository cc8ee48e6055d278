/**
 * A charge's memo answers its resend exactly as the first send was answered (every part but Redis's
 * time), and the resend charges nothing: `CHARGE_PLAIN` and the batch's plain path (a memo packed
 * with `struct`: kind, now, windows), `CHARGE` (MessagePack), with either clock, one to three
 * budgets, fractional times (a window part that goes back as text), spent budgets and windows whose
 * size the plan changed. The script is sent twice with the same KEYS and ARGV (the same nonce), as
 * the store's retry sends it.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { batchCall, batchReplies, CHARGE_BATCH } from "../../src/redis/scripts/charge-batch.js";
import { CHARGE_PLAIN, plainChargeCall } from "../../src/redis/scripts/charge-plain.js";
import { CHARGE, chargeCall, type ChargeCallInput } from "../../src/redis/scripts/charge.js";
import type { Script, ScriptCall } from "../../src/redis/scripts/script.js";
import { T0 } from "../fixtures.js";
import { sharedRedis } from "./helpers.js";

const { redis, root } = sharedRedis("memo");
let run = 0;

async function send(script: Script, { keys, args }: ScriptCall): Promise<unknown[]> {
  return (await redis.eval(script.source, keys.length, ...keys, ...args)) as unknown[];
}

/** A reply without Redis's time (part 2), each part as the host reads it. */
const timeless = (reply: unknown[]): unknown[] => reply.map((part, i) => (i === 1 ? "time" : Array.isArray(part) ? timeless(part) : part));

const budget = fc.record({ limit: fc.constantFrom(1, 2, 5), windowMs: fc.constantFrom(1_000, 2_500, 60_000) });
const charge = fc.record({
  budgets: fc.array(budget, { minLength: 1, maxLength: 3 }),
  now: fc.constantFrom(0, 1, 0.25, 1_000.5, 59_999),
  before: fc.nat(3), // charges made earlier in the same windows (some spend a budget)
  resized: fc.boolean(), // the earlier charges ran with other window sizes
});

function input(prefix: string, clock: "h" | "r", c: { budgets: { limit: number; windowMs: number }[]; now: number }, nonce: string, cap = false): ChargeCallInput {
  const budgets = c.budgets.map((b, i) => ({ key: `b:${i}`, limit: b.limit, windowMs: b.windowMs }));
  const dispatch = cap ? { name: "dispatch" as const, key: "d:1", day: 1, limit: 100, resetAt: T0 + 86_400_000, offsetMs: 0 } : undefined;
  return { clock, now: T0 + c.now, nonce, memoTtlMs: 60_000, refused: false, budgets, idempotency: undefined, cap: dispatch, memo: "memo", key: (k) => `${prefix}${k}` };
}

/** The stored windows under `prefix`, to see that a resend charged nothing. */
async function windows(prefix: string, n: number): Promise<unknown[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => redis.hgetall(`${prefix}b:${i}`)));
}

type Case = typeof charge extends fc.Arbitrary<infer T> ? T : never;

/** The earlier charges of a case (with the other window sizes when it says so), each with a nonce of its own. */
async function earlier(prefix: string, clock: "h" | "r", c: Case): Promise<void> {
  for (let k = 0; k < c.before; k++) {
    const sizes = c.resized ? c.budgets.map((b) => ({ ...b, windowMs: b.windowMs * 2 })) : c.budgets;
    await send(CHARGE_PLAIN, plainChargeCall(input(prefix, clock, { budgets: sizes, now: c.now - 1 }, `early${k}`)));
  }
}

/**
 * Sends `call` twice, as the store's retry would: the second reply is the first (but for Redis's
 * time), and the windows under `prefixes` (with `n[j]` budgets each) are as the first send left them.
 * A batch's reply is compared charge by charge (`batchReplies`).
 */
async function resend(script: Script, call: ScriptCall, prefixes: string[], n: number[]): Promise<void> {
  const stored = () => Promise.all(prefixes.map((p, j) => windows(p, n[j]!)));
  const split = (reply: unknown[]) => (script === CHARGE_BATCH ? [reply[0], reply[1], ...batchReplies(reply, n)] : reply);
  const first = split(await send(script, call));
  const after = await stored();
  const again = split(await send(script, call));
  expect(timeless(again)).toEqual(timeless(first));
  expect(await stored()).toEqual(after);
}

describe("a charge's memo answers its resend as the first send was answered, and the resend charges nothing", () => {
  for (const clock of ["h", "r"] as const) {
    it(`CHARGE_PLAIN (clock ${clock})`, async () => {
      await fc.assert(
        fc.asyncProperty(charge, async (c) => {
          const prefix = `${root}${++run}:`;
          await earlier(prefix, clock, c);
          await resend(CHARGE_PLAIN, plainChargeCall(input(prefix, clock, c, "n1")), [prefix], [c.budgets.length]);
        }),
        { numRuns: 40 },
      );
    });

    it(`CHARGE_BATCH's plain path, next to full charges (clock ${clock})`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(charge, { minLength: 1, maxLength: 4 }), async (cs) => {
          const prefixes = cs.map((_, j) => `${root}${++run}:${j}:`);
          for (let j = 0; j < cs.length; j++) await earlier(prefixes[j]!, clock, cs[j]!);
          // every third charge is a full one (a cap): its memo is CHARGE's (MessagePack); each charge has a memo hash of its own (its prefix)
          const inputs = cs.map((c, j) => input(prefixes[j]!, clock, c, `n${j}`, j % 3 === 2));
          await resend(CHARGE_BATCH, batchCall(inputs), prefixes, cs.map((c) => c.budgets.length));
        }),
        { numRuns: 25 },
      );
    });

    it(`CHARGE, a plain charge and one with a cap (clock ${clock})`, async () => {
      await fc.assert(
        fc.asyncProperty(charge, fc.boolean(), async (c, cap) => {
          const prefix = `${root}${++run}:`;
          await earlier(prefix, clock, c);
          await resend(CHARGE, chargeCall(input(prefix, clock, c, "n1", cap)), [prefix], [c.budgets.length]);
        }),
        { numRuns: 25 },
      );
    });
  }

  it("a plain charge's replay answers a memo of another form under its nonce (a full charge's, MessagePack) as it is: CHARGE_PLAIN and the batch's plain path", async () => {
    const prefix = `${root}${++run}:`;
    const c = { budgets: [{ limit: 5, windowMs: 60_000 }], now: 0 };
    const first = await send(CHARGE, chargeCall(input(prefix, "h", c, "n1")));
    expect(first[0]).toBe("c");
    const after = await windows(prefix, 1);
    expect(timeless(await send(CHARGE_PLAIN, plainChargeCall(input(prefix, "h", c, "n1"))))).toEqual(timeless(first));
    const batch = await send(CHARGE_BATCH, batchCall([input(prefix, "h", c, "n1"), input(prefix, "h", c, "n1")]));
    expect(batchReplies(batch, [1, 1]).map(timeless)).toEqual([timeless(first), timeless(first)]);
    expect(await windows(prefix, 1), "nothing charged again").toEqual(after);
  });

  it("the first send's reply is what a resend gets, part for part: a fractional reset goes back as text, a whole one as an integer", async () => {
    const prefix = `${root}${++run}:`;
    const call = plainChargeCall(input(prefix, "h", { budgets: [{ limit: 5, windowMs: 1_000 }, { limit: 5, windowMs: 60_000 }], now: 0.25 }, "n1"));
    const first = await send(CHARGE_PLAIN, call);
    expect(first[0]).toBe("C");
    expect(first.slice(2)).toEqual(["", 1, String(T0 + 1_000.25), 1, String(T0 + 60_000.25)]);
    expect(typeof first[1]).toBe("number");
    expect((await send(CHARGE_PLAIN, call)).slice(2)).toEqual(first.slice(2));
  });
});
