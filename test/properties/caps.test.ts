import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { release, type Usage } from "../../src/index.js";
import { capMembers, recordsIn, usageData } from "../../src/snapshot.js";
import { arbTrace, runPureTrace, type TraceEntry } from "../../src/testing/index.js";
import { OPERATIONS, fingerprintOf, isBudget429, isCap429, isPlanRefusal, requests, validKey, whose } from "./model.js";
import { TIMEOUT, TRACE, params } from "./settings.js";

const CAPS = { ...TRACE, focus: "caps" as const };
const DAY_MS = 86_400_000;
const TTL_MS = DAY_MS;

function capLimit(trace: Parameters<typeof runPureTrace>[0], key: string): number {
  return key.startsWith("d:") ? (trace.config.caps?.dispatch?.limit ?? 25) : (trace.config.caps?.testSend?.limit ?? 50);
}

function members(usage: Usage, key: string, day: number): readonly string[] {
  return capMembers(usage, key, day);
}

describe("invariants: daily caps (spec §8, DESIGN §2, §6, §7)", () => {
  it("refused sends (403, 400, 404, 409, 429) count nothing toward a daily cap: the caps are the same object", () => {
    fc.assert(
      fc.property(arbTrace(CAPS), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          if (entry.decision.allowed) continue;
          expect(usageData(entry.after!).caps, `${entry.decision.status} ${entry.request.path}`).toBe(usageData(entry.before!).caps);
          expect(entry.decision.charged.caps).toEqual([]);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("a released send stops counting: its member leaves the cap once; releasing it again changes nothing", () => {
    fc.assert(
      fc.property(arbTrace(CAPS), (trace) => {
        for (const entry of runPureTrace(trace)) {
          if (entry.kind !== "release" || entry.released === undefined) continue;
          const ticket = entry.released.release!;
          // a past day's ticket: that day no longer counts, whether it is uncounted is unspecified (as in the store conformance)
          const offset = (trace.config.dayStartsAtUtcOffsetMinutes ?? 0) * 60_000;
          if (Math.floor((entry.now + offset) / DAY_MS) !== ticket.day) continue;
          expect(members(entry.after!, ticket.key, ticket.day)).not.toContain(ticket.member);
          const was = members(entry.before!, ticket.key, ticket.day);
          if (entry.uncounted) expect(members(entry.after!, ticket.key, ticket.day).length).toBe(was.length - 1);
          else expect(usageData(entry.after!).caps).toBe(usageData(entry.before!).caps);
          expect(release(entry.after!, entry.released, entry.now)).toBe(entry.after);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("caps never exceed their size in a day; a daily-cap 429 exactly when the day's count has reached the size", () => {
    fc.assert(
      fc.property(arbTrace(CAPS), (trace) => {
        const offset = (trace.config.dayStartsAtUtcOffsetMinutes ?? 0) * 60_000;
        const dayOf = (now: number) => Math.floor((now + offset) / DAY_MS);
        // model: counted charges per cap key and day, by the decision that made them
        const counted = new Map<string, Set<TraceEntry>>();
        const slot = (key: string, day: number) => {
          const id = `${key}@${day}`;
          if (!counted.has(id)) counted.set(id, new Set());
          return counted.get(id)!;
        };
        const log = runPureTrace(trace);
        const byDecision = new Map(requests(log).map((e) => [e.decision, e] as const));
        // spec §8: dispatches per newsletter across all credentials, test sends per credential. The
        // model names the scope itself (found by mutation testing: trusting the engine's own cap key
        // let a per-credential dispatch cap, or a per-newsletter test-send cap, pass).
        const scopeOf = (e: Extract<TraceEntry, { kind: "request" }>) =>
          OPERATIONS.get(e.operation!)?.cap === "dispatch" ? `d:${e.decision.newsletter}` : `t:${whose(e.credential)}`;
        for (const entry of log) {
          if (entry.kind === "release" && entry.released !== undefined && entry.uncounted) {
            const from = byDecision.get(entry.released)!;
            slot(scopeOf(from), entry.released.release!.day).delete(from);
          }
          if (entry.kind !== "request") continue;
          for (const [key, value] of recordsIn(usageData(entry.after!).caps)) {
            for (const [day, counted] of Object.entries(value.days)) expect(counted.members.length, `${key} day ${day}`).toBeLessThanOrEqual(capLimit(trace, key));
          }
          if (entry.decision.release !== undefined) {
            const scope = scopeOf(entry);
            const day = slot(scope, dayOf(entry.now));
            expect(day.size, `${entry.request.path}: counted below the size of ${scope}`).toBeLessThan(capLimit(trace, scope));
            day.add(entry);
          }
          if (isCap429(entry.decision)) {
            const reason = entry.decision.reason as Extract<typeof entry.decision.reason, { rule: "daily_cap" }>;
            expect(reason.count).toBe(reason.limit);
            const scope = scopeOf(entry);
            expect(reason.limit).toBe(capLimit(trace, scope));
            expect(slot(scope, dayOf(entry.now)).size, `${entry.request.path}: refused by ${scope}, which must be full`).toBeGreaterThanOrEqual(reason.limit);
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("retries with one Idempotency-Key count once (until released or expired), and are never refused by the cap they counted toward; a released key counts again", () => {
    fc.assert(
      fc.property(arbTrace(CAPS), (trace) => {
        type KeyRecord = { expiresAt: number; fingerprint: string; countedBy: object | undefined };
        const records = new Map<string, KeyRecord>();
        const recordOf = new Map<object, KeyRecord>();
        for (const entry of runPureTrace(trace)) {
          // DESIGN §7: once the charge is released (on its day or later), the key counts again
          if (entry.kind === "release" && entry.released !== undefined) {
            const record = recordOf.get(entry.released);
            if (record !== undefined && record.countedBy === entry.released && entry.now < record.expiresAt) record.countedBy = undefined;
          }
          if (entry.kind !== "request") continue;
          const key = entry.request.idempotencyKey;
          if (!validKey(key) || OPERATIONS.get(entry.operation ?? "")?.method === "GET") continue;
          const id = `${whose(entry.credential)}\u0000${key}`;
          const fingerprint = fingerprintOf(entry.request);
          let record = records.get(id);
          if (record !== undefined && entry.now >= record.expiresAt) record = undefined;
          const countedAlready = record !== undefined && record.countedBy !== undefined && record.fingerprint === fingerprint;
          if (countedAlready) expect(isCap429(entry.decision), `retry of ${fingerprint} with ${key}`).toBe(false);
          if (!entry.decision.allowed) continue;
          // exactly: an allowed send counts unless its key already counts it; after a release it
          // counts again (found by mutation testing: a release that left the key counted survived)
          if (OPERATIONS.get(entry.operation ?? "")?.cap !== undefined) {
            expect(entry.decision.charged.caps.length, `${fingerprint} with ${key}: counted already ${countedAlready}`).toBe(countedAlready ? 0 : 1);
          }
          if (record === undefined) {
            record = { expiresAt: entry.now + TTL_MS, fingerprint, countedBy: undefined };
            records.set(id, record);
          }
          if (entry.decision.charged.caps.length > 0) {
            expect(record.countedBy, `${key} counted twice`).toBeUndefined();
            record.countedBy = entry.decision;
            // a use that counts records the key afresh: live 24 h from it (DESIGN §7)
            record.expiresAt = entry.now + TTL_MS;
            recordOf.set(entry.decision, record);
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  // Found by mutation testing: never detecting a conflict survived every property (only scripted
  // cases caught it).
  it("an Idempotency-Key reused on another method, path, query or body answers 409 conflict exactly when its record is live (per credential, 24 h); budgets charged, no cap", () => {
    fc.assert(
      fc.property(arbTrace(CAPS), (trace) => {
        const records = new Map<string, { fingerprint: string; expiresAt: number }>();
        for (const entry of requests(runPureTrace(trace))) {
          const key = entry.request.idempotencyKey;
          const op = OPERATIONS.get(entry.operation ?? "");
          const where = `${entry.request.method} ${entry.request.path} with ${String(key)}`;
          if (op === undefined || op.method === "GET" || !validKey(key) || isBudget429(entry.decision) || isPlanRefusal(entry.decision)) {
            expect(entry.decision.status, where).not.toBe(409);
            continue;
          }
          const id = `${whose(entry.credential)}\u0000${key}`;
          const fingerprint = fingerprintOf(entry.request);
          const record = records.get(id);
          const live = record !== undefined && entry.now < record.expiresAt ? record : undefined;
          const conflict = live !== undefined && live.fingerprint !== fingerprint;
          expect(entry.decision.status === 409, where).toBe(conflict);
          if (conflict) {
            expect(entry.decision.body!.error).toMatchObject({ code: "conflict", param: "Idempotency-Key" });
            expect(entry.decision.charged.budgets.length).toBeGreaterThan(0);
            expect(entry.decision.charged.caps).toEqual([]);
            expect(usageData(entry.after!).caps).toBe(usageData(entry.before!).caps);
          }
          // DESIGN §7: only an allowed write records its key, for 24 h; a released key's use that counts again records it afresh
          if (entry.decision.allowed && (live === undefined || entry.decision.charged.caps.length > 0)) records.set(id, { fingerprint, expiresAt: entry.now + TTL_MS });
        }
      }),
      params(),
    );
  }, TIMEOUT);
});
