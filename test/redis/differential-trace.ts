/**
 * The differential trace test, shared by the single-primary and the cluster runs: random traces
 * through `createPolicy` over a Redis store and over MemoryStore, with the same injected clock and
 * ids, give identical decisions, headers, releases and `GET /rate-limit`.
 */
import { expect } from "vitest";
import fc from "fast-check";
import { createPolicy, MemoryStore, type Credential, type Decision, type PolicyOptions, type PolicyStore } from "../../src/index.js";
import { plainMembers, T0, key } from "../fixtures.js";

const config: PolicyOptions = {
  budgets: { general: { limit: 10, window: 10 }, audience: { limit: 3, window: 5 }, write: { limit: 8, window: 20 } },
  caps: { dispatch: { limit: 2 }, testSend: { limit: 2 } },
  dayStartsAtUtcOffsetMinutes: -120,
};
const credentials: Credential[] = [
  key({ nl_1: { content: "write", audience: "write", sending: "write", insights: "read" }, nl_2: { sending: "write", content: "write" } }, true, "key_a"),
  key({ nl_1: { content: "write", sending: "write" } }, false, "key_b"),
  // read-only on nl_1: refused writes still charge their budgets (DESIGN §2)
  key({ nl_1: { content: "read", audience: "read" } }, false, "key_c"),
];
const roles = { nl_1: "owner", nl_2: "owner" };

const idempotencyKey = fc.option(fc.constantFrom("k1", "k2", "k3"), { nil: undefined });
const request = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" }) },
  { weight: 2, arbitrary: fc.constant({ method: "GET", path: "/me" }) },
  { weight: 1, arbitrary: fc.constant({ method: "GET", path: "/nowhere" }) },
  { weight: 1, arbitrary: fc.constant({ method: "GET", path: "/newsletters/nl_1/articles?status=draft" }) },
  {
    weight: 5,
    arbitrary: fc.record({ method: fc.constant("POST"), path: fc.constantFrom("/articles/a_1/send", "/articles/a_2/schedule"), newsletter: fc.constantFrom("nl_1", "nl_2"), idempotencyKey }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      method: fc.constant("POST"),
      path: fc.constant("/articles/a_1/test-send"),
      newsletter: fc.constant("nl_1"),
      idempotencyKey,
      body: fc.record({ to: fc.array(fc.constant("a@example.com"), { minLength: 1, maxLength: 6 }) }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ method: fc.constantFrom("POST", "PATCH"), path: fc.constantFrom("/newsletters/nl_1/articles", "/articles/a_1"), newsletter: fc.constant("nl_1"), idempotencyKey }),
  },
);
const who = fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constant(2) });
const step = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("check" as const), who, request }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.oneof(fc.integer({ min: 0, max: 6_000 }), fc.constantFrom(4_999, 5_000, 10_000, 20_000, 3_600_000, 86_400_000)) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("release" as const), pick: fc.nat(), twice: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("status" as const), who: fc.nat(credentials.length - 1) }) },
);

function withoutMember(d: Decision): Decision {
  return d.release === undefined ? d : { ...d, release: { ...d.release, member: "(member)" } };
}

function counter(): () => string {
  let n = 0;
  return () => String(++n);
}


/**
 * Runs the traces against stores made by `makeStore` (a fresh prefix per run).
 *
 * @param label - printed with the figures.
 * @param makeStore - a fresh store for trace number `run`.
 * @param numRuns - traces.
 * @param opaqueMembers - compare release tickets' members by presence only (a cluster store's own ids).
 */
export async function differentialTraces(label: string, makeStore: (run: number) => PolicyStore, numRuns: number, opaqueMembers = false): Promise<void> {
    let run = 0;
    let steps = 0;
    const seen = new Map<string, number>();
    const note = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 80, size: "large" }), async (trace) => {
        let now = T0 + 11 * 3_600_000; // an hour before the day (UTC-2) ends
        const clock = () => now;
        const store = makeStore(++run);
        const policies = [
          createPolicy({ store: new MemoryStore(), config, clock, generateId: counter() }),
          createPolicy({ store, config, clock, generateId: counter() }),
        ] as const;
        const allowed: Array<[Decision, Decision]> = [];
        for (const s of trace) {
          steps++;
          if (s.kind === "advance") {
            now += s.ms;
          } else if (s.kind === "check") {
            const who = { credential: credentials[s.who]!, roles };
            const expected = await policies[0].check(s.request, who);
            const actual = await policies[1].check(s.request, who);
            // a member is an opaque id: a cluster store makes its own (only its presence must agree)
            expect(opaqueMembers ? withoutMember(actual) : actual).toEqual(opaqueMembers ? withoutMember(expected) : plainMembers(expected));
            note(`${expected.status} ${expected.reason.rule}${expected.reason.rule === "allowed" && expected.reason.replay ? " replay" : ""}`);
            if (expected.release !== undefined) allowed.push([expected, actual]);
          } else if (s.kind === "release") {
            if (allowed.length === 0) continue;
            const [d, own] = allowed[s.pick % allowed.length]!;
            for (let i = 0; i < (s.twice ? 2 : 1); i++) {
              const released = await policies[0].release(d);
              // each store's own ticket (MemoryStore's names carry its tag)
              expect(await policies[1].release(own)).toBe(released);
              note(`release ${released}`);
            }
          } else {
            const c = credentials[s.who]!;
            expect(await policies[1].status(c)).toEqual(await policies[0].status(c));
          }
        }
      }),
      { seed: 20_261_122, numRuns },
    );
    console.log(`differential (${label}): ${run} traces, ${steps} steps, RedisStore ≡ MemoryStore`, Object.fromEntries([...seen].sort()));
    // the traces reach every outcome the store can produce
    for (const what of ["200 allowed", "200 allowed replay", "429 budget_spent", "429 daily_cap", "409 idempotency_conflict", "403 insufficient_scope", "404 unknown_operation", "400 invalid_input", "release true", "release false"]) {
      expect(seen.get(what), what).toBeGreaterThan(0);
    }
}
