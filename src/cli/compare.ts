/** Two replays of one trace side by side: totals per credential and newsletter, and the requests whose outcome changed. */
import { describeOutcome } from "./outcome.js";
import { summaryKey, type Replayed, type ReplayResult } from "./replay.js";
import { tallyOf, type Tally } from "./tally.js";

/** One summary row of two replays side by side. */
export interface ComparedRow {
  readonly credential: string;
  readonly newsletter: string;
  readonly before: Tally;
  readonly after: Tally;
}

/** Two replays of one trace compared. */
export interface Comparison {
  readonly rows: readonly ComparedRow[];
  /** Requests whose outcome differs, in trace order. */
  readonly changed: ReadonlyArray<{ readonly before: Replayed; readonly after: Replayed }>;
}

/**
 * Compares two replays of the same trace: totals per credential and newsletter, and every request
 * whose outcome changed.
 *
 * @param before - the replay with the current config.
 * @param after - the replay with the other config.
 * @returns rows in the order of `before`'s summary (then rows only `after` has), and the changed requests.
 */
export function compare(before: ReplayResult, after: ReplayResult): Comparison {
  const beforeRows = new Map(before.summary.map((r) => [summaryKey(r), r]));
  const afterRows = new Map(after.summary.map((r) => [summaryKey(r), r]));
  const seen = new Set<string>();
  const rows: ComparedRow[] = [];
  for (const r of [...before.summary, ...after.summary]) {
    const k = summaryKey(r);
    if (seen.has(k)) continue;
    seen.add(k);
    rows.push({ credential: r.credential, newsletter: r.newsletter, before: tallyOf(beforeRows.get(k)), after: tallyOf(afterRows.get(k)) });
  }
  const changed = before.decisions.flatMap((b, i) => {
    const a = after.decisions[i]!;
    return describeOutcome(a.outcome) === describeOutcome(b.outcome) ? [] : [{ before: b, after: a }];
  });
  return { rows, changed };
}
