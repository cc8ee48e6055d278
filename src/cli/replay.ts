/**
 * Replaying a trace of traffic through a config: every line decided by `evaluate` over one running
 * snapshot of the counters, then summed per credential and newsletter. Pure: no files, no clock.
 */
import type { PolicyConfig } from "../config.js";
import { emptyUsage, evaluate } from "../evaluate.js";
import type { Credential, Decision, PolicyRequest, Roles } from "../types.js";

/** One line of a trace (JSON lines): when, who, and what was asked. */
export interface TraceLine {
  /** ISO 8601 time, or ms since the epoch. */
  readonly time: string | number;
  readonly credential: Credential;
  /** The owner's roles per newsletter at that time. */
  readonly roles: Roles;
  readonly request: PolicyRequest;
}

/** What became of one request. */
export type Outcome =
  | { readonly kind: "allowed" }
  | { readonly kind: "throttled"; readonly budget: string }
  | { readonly kind: "capped"; readonly cap: string }
  | { readonly kind: "refused"; readonly why: string };

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

/** Totals for one credential on one newsletter. */
export interface Tally {
  requests: number;
  allowed: number;
  throttled: Record<string, number>;
  capped: Record<string, number>;
  refused: Record<string, number>;
}

/** A summary row. */
export interface SummaryRow extends Tally {
  readonly credential: string;
  readonly newsletter: string;
}

/** A replay's result. */
export interface ReplayResult {
  readonly decisions: readonly Replayed[];
  readonly summary: readonly SummaryRow[];
  readonly totals: Tally;
}

/**
 * Reads a trace's lines. A line is a request `{ time, credential, roles, request }`; to keep traces
 * short, a line `{ credential, roles }` without `request` defines a credential, and later request
 * lines may then give `credential` as its id and leave `roles` out (the definition's are used).
 *
 * @param lines - the file's lines (blank ones are skipped).
 * @returns the request lines, credentials resolved.
 * @throws Error naming the line number and the field, for a line that is neither.
 */
export function parseTrace(lines: readonly string[]): TraceLine[] {
  const known = new Map<string, { credential: Credential; roles: Roles }>();
  const out: TraceLine[] = [];
  lines.forEach((text, i) => {
    if (text.trim() === "") return;
    const n = i + 1;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new Error(`trace line ${n}: not JSON (${(error as Error).message})`);
    }
    if (typeof value !== "object" || value === null) throw new Error(`trace line ${n}: must be an object`);
    if (value.request === undefined && typeof value.credential === "object" && value.credential !== null) {
      const credential = value.credential as Credential;
      if (typeof credential.id !== "string") throw new Error(`trace line ${n}: credential must have an id`);
      known.set(credential.id, { credential, roles: (value.roles ?? {}) as Roles });
      return;
    }
    if (typeof value.credential === "string") {
      const defined = known.get(value.credential);
      if (defined === undefined) throw new Error(`trace line ${n}: credential "${value.credential}" is not defined on an earlier line`);
      value = { ...value, credential: defined.credential, roles: value.roles ?? defined.roles };
    }
    out.push(parseTraceLine(JSON.stringify(value), n));
  });
  return out;
}

/** Reads one request line; throws an Error naming the line and the field when it is not one. */
export function parseTraceLine(text: string, lineNumber: number): TraceLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`trace line ${lineNumber}: not JSON (${(error as Error).message})`);
  }
  const line = value as Partial<TraceLine> | null;
  const fail = (field: string, what: string) => new Error(`trace line ${lineNumber}: ${field} must be ${what}`);
  if (typeof line !== "object" || line === null) throw fail("the line", "an object { time, credential, roles, request }");
  if (typeof line.time !== "number" && (typeof line.time !== "string" || !Number.isFinite(Date.parse(line.time)))) throw fail("time", "an ISO 8601 time or ms since the epoch");
  if (typeof line.credential !== "object" || line.credential === null || typeof line.credential.id !== "string") throw fail("credential", "a credential object with an id");
  if (typeof line.roles !== "object" || line.roles === null) throw fail("roles", "an object of newsletter → role");
  if (typeof line.request !== "object" || line.request === null) throw fail("request", "a request descriptor { method, path, … }");
  return line as TraceLine;
}

function timeOf(line: TraceLine): number {
  return typeof line.time === "number" ? line.time : Date.parse(line.time);
}

function outcomeOf(decision: Decision): Outcome {
  const r = decision.reason;
  if (decision.allowed) return { kind: "allowed" };
  if (r.rule === "budget_spent") return { kind: "throttled", budget: r.budget };
  if (r.rule === "daily_cap") return { kind: "capped", cap: r.cap };
  const code = decision.body.error.code;
  if (r.rule === "insufficient_scope") return { kind: "refused", why: `${code} #${r.case} (${r.param ? `${r.param}, ` : ""}needs ${r.needed})` };
  if (r.rule === "no_reach") return { kind: "refused", why: `${code} (${r.cause.replace("_", " ")})` };
  if (r.rule === "invalid_input" || r.rule === "malformed_request") return { kind: "refused", why: `${code} (${r.param})` };
  return { kind: "refused", why: code };
}

function emptyTally(): Tally {
  return { requests: 0, allowed: 0, throttled: {}, capped: {}, refused: {} };
}

function count(tally: Tally, outcome: Outcome): void {
  tally.requests++;
  const bump = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1);
  if (outcome.kind === "allowed") tally.allowed++;
  else if (outcome.kind === "throttled") bump(tally.throttled, outcome.budget);
  else if (outcome.kind === "capped") bump(tally.capped, outcome.cap);
  else bump(tally.refused, outcome.why);
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
export function replay(lines: readonly TraceLine[], config: PolicyConfig, onProgress?: (done: number, total: number) => void): ReplayResult {
  const ordered = lines.map((line, i) => ({ line, i, at: timeOf(line) })).sort((a, b) => a.at - b.at || a.i - b.i);
  let usage = emptyUsage();
  const decisions: Replayed[] = [];
  const rows = new Map<string, SummaryRow>();
  const totals = emptyTally();
  ordered.forEach(({ line, at }, done) => {
    const next = evaluate(line.request, { credential: line.credential, roles: line.roles, usage, now: at, config });
    usage = next.usage;
    const d = next.decision;
    const outcome = outcomeOf(d);
    const newsletter = d.newsletter ?? "-";
    const spent = d.reason.rule === "budget_spent" ? d.reason.spent.map((s) => s.name) : [];
    const caps = d.reason.rule === "daily_cap" ? [d.reason.cap] : [...d.charged.caps];
    decisions.push({ at, credential: line.credential.id, newsletter, operation: d.operation, request: `${line.request.method} ${line.request.path}`, status: d.status, outcome, charged: [...d.charged.budgets], spent, caps });
    const key = `${line.credential.id}\u0000${newsletter}`;
    let row = rows.get(key);
    if (row === undefined) rows.set(key, (row = { credential: line.credential.id, newsletter, ...emptyTally() }));
    count(row, outcome);
    count(totals, outcome);
    onProgress?.(done + 1, ordered.length);
  });
  const summary = [...rows.values()].sort((a, b) => b.requests - a.requests || a.credential.localeCompare(b.credential) || a.newsletter.localeCompare(b.newsletter));
  return { decisions, summary, totals };
}

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
  const key = (r: { credential: string; newsletter: string }) => `${r.credential}\u0000${r.newsletter}`;
  const beforeRows = new Map(before.summary.map((r) => [key(r), r]));
  const afterRows = new Map(after.summary.map((r) => [key(r), r]));
  const seen = new Set<string>();
  const rows: ComparedRow[] = [];
  for (const r of [...before.summary, ...after.summary]) {
    const k = key(r);
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

function tallyOf(row: Tally | undefined): Tally {
  if (row === undefined) return emptyTally();
  const { requests, allowed, throttled, capped, refused } = row;
  return { requests, allowed, throttled, capped, refused };
}

/** An outcome as a short phrase: `allowed`, `throttled by audience`, `capped by dispatch`, or the refusal. */
export function describeOutcome(outcome: Outcome): string {
  switch (outcome.kind) {
    case "allowed":
      return "allowed";
    case "throttled":
      return `throttled by ${outcome.budget}`;
    case "capped":
      return `capped by ${outcome.cap}`;
    case "refused":
      return `refused: ${outcome.why}`;
  }
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
