/**
 * What conforming stores must agree on: an outcome, a decision and a trace entry with what may
 * legitimately differ between stores (a cap member's value, `now`, a past day's release) removed.
 */
import { dayOf } from "../../calendar.js";
import type { ChargeOutcome, WindowReading } from "../../store.js";
import type { Decision } from "../../types.js";
import type { TraceEntry } from "../run-trace.js";

/** An outcome with what may legitimately differ between stores removed: the member's value (only its presence counts) and `now`. */
export interface ComparableOutcome {
  kind: ChargeOutcome["kind"];
  windows: WindowReading[];
  replay?: boolean;
  counted?: boolean;
  fingerprint?: string;
  count?: number;
}

/**
 * Reduces a store's outcome to what every conforming store must agree on.
 *
 * @param outcome - what `PolicyStore.charge` returned.
 * @returns kind, windows, and per kind: replay and whether a cap member was made, the conflicting fingerprint, or the cap count.
 * @example
 * expect(comparableOutcome(await store.charge(request))).toEqual(comparableOutcome(new MemoryStore().charge(request)));
 */
export function comparableOutcome(outcome: ChargeOutcome): ComparableOutcome {
  const windows = outcome.windows.map((w) => ({ count: w.count, resetAt: w.resetAt }));
  switch (outcome.kind) {
    case "budget_spent":
      return { kind: outcome.kind, windows };
    case "charged":
      return { kind: outcome.kind, windows, replay: outcome.replay, counted: outcome.member !== undefined };
    case "conflict":
      return { kind: outcome.kind, windows, fingerprint: outcome.fingerprint };
    case "cap_reached":
      return { kind: outcome.kind, windows, count: outcome.count };
  }
}

/** A decision with the cap member's value removed (stores name members as they like). */
export function comparableDecision(decision: Decision): unknown {
  if (decision.release === undefined) return decision;
  const { member: _member, ...ticket } = decision.release;
  return { ...decision, release: ticket };
}

/** A trace entry with what stores may name differently removed (and a past day's release result: unspecified). */
export function comparableEntry(entry: TraceEntry, offsetMs: number): unknown {
  switch (entry.kind) {
    case "request":
      return { kind: entry.kind, decision: comparableDecision(entry.decision) };
    case "release": {
      // a release of a past day's charge is unspecified (see releaseBoth in run-program.ts)
      const sameDay = entry.released?.release !== undefined && entry.released.release.day === dayOf(entry.now, offsetMs).day;
      return { kind: entry.kind, uncounted: sameDay ? entry.uncounted : "past day" };
    }
    case "status":
      return entry;
    default:
      return entry.kind;
  }
}
