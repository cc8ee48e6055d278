/**
 * Replaying a trace of traffic through a config: every line decided by `evaluate` over one running
 * snapshot of the counters, then summed per credential and newsletter. Pure: no files, no clock.
 */
import type { PolicyConfig } from "../config.js";
import { evaluate } from "../evaluate.js";
import { PolicyConfigError } from "../errors.js";
import { emptyUsage, type Usage } from "../snapshot.js";
import { outcomeOf, type Outcome } from "./outcome.js";
import { count, emptyTally, type Tally } from "./tally.js";
import { timeOf, type TraceLine } from "./trace-file.js";

/** One decided line. */
export interface Replayed {
  readonly at: number;
  readonly credential: string;
  readonly newsletter: string;
  readonly operation: string | undefined;
  readonly request: string;
  readonly status: number;
  readonly outcome: Outcome;
  /** Budgets the request was charged to, and refused by (when throttled). */
  readonly charged: readonly string[];
  readonly spent: readonly string[];
  /** Caps it counted toward. */
  readonly caps: readonly string[];
}

/** A summary row. */
export interface SummaryRow extends Tally {
  readonly credential: string;
  readonly newsletter: string;
}

/** What tells summary rows apart: the credential and the newsletter. */
export function summaryKey(row: { readonly credential: string; readonly newsletter: string }): string {
  return `${row.credential}\u0000${row.newsletter}`;
}

/** A replay's result. */
export interface ReplayResult {
  readonly decisions: readonly Replayed[];
  readonly summary: readonly SummaryRow[];
  readonly totals: Tally;
}

/**
 * Decides every line of a trace, in time order (stable for equal times), with one running set of
 * counters, as one server process with this config would have.
 *
 * @param lines - the trace.
 * @param config - the config to decide with.
 * @param onProgress - told after each line: (done, total).
 * @returns every decision, and totals per credential and newsletter (sorted by requests, most first).
 */
/**
 * One line decided; a host mistake in the line (its credential, roles or time: PolicyConfigError)
 * names the trace line it is on, which a long trace's reader needs to find it.
 */
function decideLine(line: TraceLine, usage: Usage, at: number, config: PolicyConfig): ReturnType<typeof evaluate> {
  try {
    const state = { credential: line.credential, roles: line.roles, usage, now: at, config };
    return evaluate(line.request, line.limits === undefined ? state : { ...state, limits: line.limits });
  } catch (error) {
    if (!(error instanceof PolicyConfigError) || line.lineNumber === undefined) throw error;
    throw new PolicyConfigError(`trace line ${line.lineNumber}: ${error.field}`, error.problem);
  }
}

export function replay(lines: readonly TraceLine[], config: PolicyConfig, onProgress?: (done: number, total: number) => void): ReplayResult {
  const ordered = lines.map((line, i) => ({ line, i, at: timeOf(line) })).sort((a, b) => a.at - b.at || a.i - b.i);
  let usage = emptyUsage();
  const decisions: Replayed[] = [];
  const rows = new Map<string, SummaryRow>();
  const totals = emptyTally();
  ordered.forEach(({ line, at }, done) => {
    const next = decideLine(line, usage, at, config);
    usage = next.usage;
    const d = next.decision;
    const outcome = outcomeOf(d);
    const newsletter = d.newsletter ?? "-";
    const spent = d.reason.rule === "budget_spent" ? d.reason.spent.map((s) => s.name) : [];
    const caps = d.reason.rule === "daily_cap" ? [d.reason.cap] : [...d.charged.caps];
    decisions.push({ at, credential: line.credential.id, newsletter, operation: d.operation, request: `${line.request.method} ${line.request.path}`, status: d.status, outcome, charged: [...d.charged.budgets], spent, caps });
    const key = summaryKey({ credential: line.credential.id, newsletter });
    let row = rows.get(key);
    if (row === undefined) rows.set(key, (row = { credential: line.credential.id, newsletter, ...emptyTally() }));
    count(row, outcome);
    count(totals, outcome);
    onProgress?.(done + 1, ordered.length);
  });
  const summary = [...rows.values()].sort((a, b) => b.requests - a.requests || a.credential.localeCompare(b.credential) || a.newsletter.localeCompare(b.newsletter));
  return { decisions, summary, totals };
}
