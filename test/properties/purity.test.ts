import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { setAutoFreeze } from "immer";
import { evaluate, prune, release, reset } from "../../src/index.js";
import { usageData } from "../../src/snapshot.js";
import { arbTrace, runPureTrace } from "../../src/testing/index.js";
import { unfrozenPath } from "../fixtures.js";
import { deepFreeze, requests } from "./model.js";
import { TIMEOUT, TRACE, params } from "./settings.js";

describe("invariants: evaluate is pure (DESIGN §14)", () => {
  it("frozen inputs are accepted and left unchanged, and the same inputs give the same decision and counters", () => {
    fc.assert(
      fc.property(arbTrace({ ...TRACE, maxSteps: 200 }), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const request = deepFreeze(structuredClone(entry.request));
          const credential = deepFreeze(structuredClone(entry.credential));
          const roles = deepFreeze({ ...entry.roles });
          const copies = structuredClone({ request, credential, roles });
          const state = deepFreeze({ credential, roles, usage: entry.before!, now: entry.now, config: trace.config });
          const first = evaluate(request, state);
          const second = evaluate(request, state);
          expect(first.decision).toEqual(entry.decision);
          expect(second.decision).toEqual(first.decision);
          expect(second.usage).toEqual(first.usage);
          expect(first.usage).toEqual(entry.after);
          expect({ request, credential, roles }).toEqual(copies);
        }
      }),
      params(0.5),
    );
  }, TIMEOUT);

  it("an unchanged snapshot comes back as the same object; every snapshot is frozen and never changes afterwards", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        const log = runPureTrace(trace);
        const kept: [unknown, unknown][] = [];
        for (const entry of log) {
          if (entry.kind !== "request" && entry.kind !== "release") continue;
          if (entry.after === undefined) continue;
          const charged = entry.kind === "request" && (entry.decision.charged.budgets.length > 0 || entry.decision.charged.caps.length > 0);
          if (entry.kind === "request" && !charged) expect(entry.after).toBe(entry.before);
          expect(Object.isFrozen(entry.after)).toBe(true);
          expect(Object.isFrozen(usageData(entry.after).windows)).toBe(true);
          kept.push([entry.after, structuredClone(entry.after)]);
        }
        for (const [snapshot, copy] of kept) expect(snapshot).toEqual(copy);
      }),
      params(),
    );
  }, TIMEOUT);

  // Regression (issue 10): a change froze only the objects it built, so what it kept of a snapshot
  // restored from JSON (unfrozen levels and leaves below its new frozen ones) stayed unfrozen in the
  // snapshot it handed back (test/snapshot-frozen.test.ts holds the case found).
  it("every snapshot evaluate, release, prune and reset hand back is frozen all the way down, also from a snapshot restored from JSON, with the same decision and counters", () => {
    fc.assert(
      fc.property(arbTrace({ ...TRACE, maxSteps: 120, focus: "caps" }), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const restored = JSON.parse(JSON.stringify(entry.before)) as typeof entry.before;
          const next = evaluate(entry.request, { credential: entry.credential, roles: entry.roles, usage: restored!, now: entry.now, config: trace.config });
          expect(next.decision).toEqual(entry.decision);
          expect(next.usage).toEqual(entry.after);
          if (next.usage !== restored) expect(unfrozenPath(next.usage)).toBeUndefined();
          expect(unfrozenPath(entry.after)).toBeUndefined();
          const later = entry.now + 3 * 86_400_000;
          // a snapshot handed back unchanged is the host's own (restored) object; any other is frozen through
          const copy = (): typeof entry.after => JSON.parse(JSON.stringify(entry.after)) as typeof entry.after;
          const handed = [copy(), copy(), copy()];
          const made = [prune(handed[0]!, later), reset(handed[1]!, { credential: entry.credential }, entry.now)];
          if (entry.decision.release !== undefined) made.push(release(handed[2]!, entry.decision, entry.now));
          made.forEach((m, i) => {
            if (m !== handed[i]) expect(unfrozenPath(m)).toBeUndefined();
          });
        }
      }),
      params(0.5),
    );
  }, TIMEOUT);

  // Regression: evaluate, release, prune and reset used immer's shared `produce`, so a host that
  // called immer's global setAutoFreeze(false) for its own state got snapshots whose top level could
  // be changed in place. They use a private Immer instance now (src/immer.ts).
  it("a host's global immer settings (setAutoFreeze(false)) do not reach the snapshots: evaluate, release, prune and reset still hand back frozen ones", () => {
    setAutoFreeze(false);
    try {
      fc.assert(
        fc.property(arbTrace({ ...TRACE, focus: "caps" }), (trace) => {
          for (const entry of requests(runPureTrace(trace))) {
            expect(Object.isFrozen(entry.after)).toBe(true);
            if (entry.decision.release !== undefined) expect(Object.isFrozen(release(entry.after!, entry.decision, entry.now))).toBe(true);
            const later = entry.now + 3 * 86_400_000;
            const pruned = prune(entry.after!, later);
            expect(Object.isFrozen(pruned)).toBe(true);
            expect(Object.isFrozen(reset(entry.after!, { credential: entry.credential }, entry.now))).toBe(true);
          }
        }),
        params(),
      );
    } finally {
      setAutoFreeze(true);
    }
  }, TIMEOUT);

  it("release is pure too: a decision without a ticket, or one released already, gives back the same object", () => {
    fc.assert(
      fc.property(arbTrace({ ...TRACE, focus: "caps" }), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          if (entry.decision.release === undefined) expect(release(entry.after!, entry.decision, entry.now)).toBe(entry.after);
          else {
            const once = release(entry.after!, entry.decision, entry.now);
            expect(once).not.toBe(entry.after);
            expect(release(once, entry.decision, entry.now)).toBe(once);
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("ids derived from the inputs: a trace replayed gives the same request ids, and two requests share one only when their inputs are the same", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        const entries = requests(runPureTrace(trace));
        const ids = entries.map((e) => e.decision.requestId);
        expect(requests(runPureTrace(trace)).map((e) => e.decision.requestId)).toEqual(ids);
        const seen = new Map<string, (typeof entries)[number]>();
        for (const entry of entries) {
          expect(entry.decision.requestId).toMatch(/^req_[0-9a-f]{16}$/);
          const other = seen.get(entry.decision.requestId);
          if (other !== undefined) {
            // DESIGN §14: same inputs, same decision; a budget 429 leaves the counters as they were
            expect(other.before).toBe(entry.before);
            expect(other.now).toBe(entry.now);
            expect(other.credential.id).toBe(entry.credential.id);
          }
          seen.set(entry.decision.requestId, entry);
        }
      }),
      params(),
    );
  }, TIMEOUT);
});
