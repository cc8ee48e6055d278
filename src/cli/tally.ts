/** Counting outcomes: a tally per credential and newsletter, and its counts as text. */
import type { Outcome } from "./outcome.js";

/** Totals for one credential on one newsletter. */
export interface Tally {
  requests: number;
  allowed: number;
  throttled: Record<string, number>;
  capped: Record<string, number>;
  refused: Record<string, number>;
}

/** A tally of nothing yet. */
export function emptyTally(): Tally {
  return { requests: 0, allowed: 0, throttled: {}, capped: {}, refused: {} };
}

/** Adds one outcome to a tally. */
export function count(tally: Tally, outcome: Outcome): void {
  tally.requests++;
  const bump = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1);
  if (outcome.kind === "allowed") tally.allowed++;
  else if (outcome.kind === "throttled") bump(tally.throttled, outcome.budget);
  else if (outcome.kind === "capped") bump(tally.capped, outcome.cap);
  else bump(tally.refused, outcome.why);
}

/** A tally's own counts (a summary row without its names), or an empty one. */
export function tallyOf(row: Tally | undefined): Tally {
  if (row === undefined) return emptyTally();
  const { requests, allowed, throttled, capped, refused } = row;
  return { requests, allowed, throttled, capped, refused };
}

/** A tally's non-allowed counts as `name n, name n`, or `-`. */
export function breakdown(record: Readonly<Record<string, number>>): string {
  const entries = Object.entries(record).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return entries.length === 0 ? "-" : entries.map(([name, n]) => `${name} ${n}`).join(", ");
}

/** Sum of a breakdown. */
export function total(record: Readonly<Record<string, number>>): number {
  return Object.values(record).reduce((a, b) => a + b, 0);
}
