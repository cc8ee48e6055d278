/**
 * An independent model of the spec's rules, written from the spec and DESIGN.md rather than from
 * src/: role caps, effective levels, reach, which budgets an operation belongs to, fixed budget
 * windows and the headers they give. The properties hold the engine to it.
 */
import { defaultOperations, type Credential, type Decision, type Family, type Level, type OperationSpec, type PolicyOptions, type PolicyRequest } from "../../src/index.js";
import { EXTRA_OPERATIONS, type Trace, type TraceEntry } from "../../src/testing/index.js";

export const FAMILIES: readonly Family[] = ["content", "audience", "sending", "insights", "settings", "webhooks"];
const RANK: Record<Level, number> = { none: 0, read: 1, write: 2 };
export const rank = (level: Level): number => RANK[level];
export const minLevel = (a: Level, b: Level): Level => (RANK[a] <= RANK[b] ? a : b);

export const OPERATIONS: ReadonlyMap<string, OperationSpec> = new Map([...defaultOperations, ...EXTRA_OPERATIONS].map((op) => [op.id, op]));

export type Caps = Record<Family, Level>;

/** spec §5.1, §8.3: counters are per API key or per OAuth authorisation, so kind and id together. */
export const whose = (credential: Pick<Credential, "id" | "kind">): string => `${credential.kind}\u0000${credential.id}`;

/** spec §5.6: owner and admin may grant everything; an editor at most settings: read. Extra roles: their config; left out = none. */
export function roleCap(config: PolicyOptions, role: string | undefined): Caps | undefined {
  if (role === undefined) return undefined;
  const all = (level: Level) => Object.fromEntries(FAMILIES.map((f) => [f, level])) as Caps;
  if (role === "owner" || role === "admin") return all("write");
  if (role === "editor") return { ...all("write"), settings: "read" };
  const extra = config.roles !== undefined && Object.hasOwn(config.roles, role) ? config.roles[role] : undefined;
  if (extra === undefined) return undefined;
  const caps = all("none");
  for (const f of FAMILIES) if (Object.hasOwn(extra, f)) caps[f] = extra[f]!;
  return caps;
}

/** spec §2: a grant's level; anything not read/write is none. */
export function grantOf(credential: Credential, newsletter: string, family: Family): Level {
  if (!Object.hasOwn(credential.newsletters, newsletter)) return "none";
  const grants = credential.newsletters[newsletter]!;
  const level = Object.hasOwn(grants, family) ? grants[family] : undefined;
  return level === "read" || level === "write" ? level : "none";
}

/** spec §5.4: per family, the lesser of the grant and the role cap. */
export function effective(credential: Credential, newsletter: string, caps: Caps): Caps {
  return Object.fromEntries(FAMILIES.map((f) => [f, minLevel(grantOf(credential, newsletter, f), caps[f])])) as Caps;
}

/** Whether the operation is about one newsletter (reach applies). */
export function isScoped(op: OperationSpec): boolean {
  return op.needs !== "account: read" && (op.path.includes("{newsletter}") || op.needs !== undefined || op.cap !== undefined);
}

/** The newsletter a generated request names: its `{newsletter}` segment, decoded, or the `newsletter` field. */
export function newsletterOf(op: OperationSpec, request: { path: string; newsletter?: string }): string | undefined {
  const at = op.path.split("/").indexOf("{newsletter}");
  if (at >= 0) return decodeURIComponent(request.path.split("?")[0]!.split("/")[at]!);
  return typeof request.newsletter === "string" && request.newsletter !== "" ? request.newsletter : undefined;
}

/** What the model says about reach and levels for one request entry. */
export interface Access {
  op: OperationSpec;
  newsletter: string | undefined;
  /** DESIGN §8: minted for it and a role there now. */
  reached: boolean;
  levels: Caps | undefined;
  caps: Caps | undefined;
}

export function access(trace: Trace, entry: Extract<TraceEntry, { kind: "request" }>): Access | undefined {
  const op = entry.operation === undefined ? undefined : OPERATIONS.get(entry.operation);
  if (op === undefined || !isScoped(op)) return undefined;
  const newsletter = newsletterOf(op, entry.request);
  const role = newsletter !== undefined && Object.hasOwn(entry.roles, newsletter) ? entry.roles[newsletter] : undefined;
  const caps = roleCap(trace.config, role);
  const granted = newsletter !== undefined && Object.hasOwn(entry.credential.newsletters, newsletter);
  const reached = granted && caps !== undefined;
  return { op, newsletter, reached, caps, levels: reached ? effective(entry.credential, newsletter!, caps!) : undefined };
}

/** spec §8 budgets of an operation, in policy order (general, audience, write, then the host's). */
export function budgetsOf(trace: Trace, operation: string | undefined): { name: string; limit: number; window: number }[] {
  const order = ["general", "audience", "write", ...Object.keys(trace.config.budgets ?? {}).filter((n) => !["general", "audience", "write"].includes(n))];
  const defaults: Record<string, { limit: number; window: number }> = { general: { limit: 600, window: 60 }, audience: { limit: 60, window: 60 }, write: { limit: 60, window: 60 } };
  const op = operation === undefined ? undefined : OPERATIONS.get(operation);
  const wanted = new Set(["general", ...(op?.budgets ?? []), ...(op !== undefined && op.method !== "GET" ? ["write"] : [])]);
  return order
    .filter((n) => wanted.has(n))
    .map((name) => ({ name, limit: trace.config.budgets?.[name]?.limit ?? defaults[name]!.limit, window: trace.config.budgets?.[name]?.window ?? defaults[name]!.window }));
}

/** spec §8 RateLimit-Policy for a list of budgets. */
export function policyHeader(budgets: readonly { name: string; limit: number; window: number }[]): string {
  return budgets.map((b) => `"${b.name}";q=${b.limit};w=${b.window}`).join(", ");
}

/** What the budget model expects of one request. */
export interface BudgetExpectation {
  budgets: { name: string; limit: number; window: number }[];
  /** Names of the budgets spent before the request (DESIGN §2: then nothing is charged). */
  spent: string[];
  /** The budgets the request is charged to: all of them, or none when one is full (DESIGN §2). */
  charged: string[];
  /** Expected RateLimit-* headers (and Retry-After for a budget 429). */
  headers: Record<string, string>;
  /** The budget a budget 429 names (DESIGN §3). */
  named?: string;
  /** Counts after the request, per budget. */
  counts: number[];
}

/** Fixed windows per credential and budget, starting at the first charged request (DESIGN §4). */
export class BudgetModel {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly trace: Trace) {}

  private open(key: string, windowMs: number, now: number): { start: number; count: number } | undefined {
    const w = this.windows.get(key);
    return w !== undefined && now < w.start + windowMs ? w : undefined;
  }

  /** The figures of a budget now, without charging (GET /rate-limit). */
  figures(credential: string, budget: { name: string; limit: number; window: number }, now: number): { limit: number; remaining: number; reset: number } {
    const w = this.open(`${credential}\u0000${budget.name}`, budget.window * 1000, now);
    if (w === undefined) return { limit: budget.limit, remaining: budget.limit, reset: budget.window };
    return { limit: budget.limit, remaining: Math.max(0, budget.limit - w.count), reset: Math.max(1, Math.ceil((w.start + budget.window * 1000 - now) / 1000)) };
  }

  /** Expectation for a request entry, then applies the charge the model says happens (when `charge`). */
  request(entry: Extract<TraceEntry, { kind: "request" }>, charge = true): BudgetExpectation {
    const budgets = budgetsOf(this.trace, entry.operation);
    const now = entry.now;
    const keys = budgets.map((b) => `${whose(entry.credential)}\u0000${b.name}`);
    const open = budgets.map((b, i) => this.open(keys[i]!, b.window * 1000, now));
    const full = budgets.filter((b, i) => (open[i]?.count ?? 0) >= b.limit).map((b) => b.name);
    // DESIGN §1: route comes before budgets, so a request that names no operation is answered 404
    // (or 400) whatever the budgets; with a spent budget it is charged nothing (DESIGN §2)
    const spent = entry.operation === undefined ? [] : full;
    if (full.length === 0 && charge) {
      budgets.forEach((_, i) => this.windows.set(keys[i]!, { start: open[i]?.start ?? now, count: (open[i]?.count ?? 0) + 1 }));
    }
    const figures = budgets.map((b) => this.figures(whose(entry.credential), b, now));
    // DESIGN §5: fewest remaining; ties to the longer reset, then policy order
    let best = 0;
    figures.forEach((f, i) => {
      const b = figures[best]!;
      if (f.remaining < b.remaining || (f.remaining === b.remaining && f.reset > b.reset)) best = i;
    });
    const headers: Record<string, string> = {
      "RateLimit-Policy": policyHeader(budgets),
      "RateLimit-Limit": String(figures[best]!.limit),
      "RateLimit-Remaining": String(figures[best]!.remaining),
      "RateLimit-Reset": String(figures[best]!.reset),
    };
    const expectation: BudgetExpectation = { budgets, spent, charged: full.length === 0 ? budgets.map((b) => b.name) : [], headers, counts: budgets.map((b) => this.open(`${whose(entry.credential)}\u0000${b.name}`, b.window * 1000, now)?.count ?? 0) };
    if (spent.length > 0) {
      // DESIGN §3: name general when spent; wait for the longest of the spent budgets
      expectation.named = spent.includes("general") ? "general" : spent[0]!;
      headers["Retry-After"] = String(Math.max(...budgets.filter((b) => spent.includes(b.name)).map((b) => this.figures(whose(entry.credential), b, now).reset)));
    }
    return expectation;
  }
}

/** The request entries of a log. */
export function requests(log: readonly TraceEntry[]): Extract<TraceEntry, { kind: "request" }>[] {
  return log.filter((e): e is Extract<TraceEntry, { kind: "request" }> => e.kind === "request");
}

export const isBudget429 = (d: Decision): boolean => d.reason.rule === "budget_spent";
export const isCap429 = (d: Decision): boolean => d.reason.rule === "daily_cap";

/** DESIGN §10: what the engine accepts as an Idempotency-Key. */
export const validKey = (key: unknown): key is string => typeof key === "string" && /^[\x21-\x7e]{1,255}$/.test(key);

/** Deep-freezes a value (for purity checks). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<string | symbol, unknown>)[key]);
  }
  return value;
}

/** The values a request sends for a query parameter, as the spec's filters read them: repeated or comma-separated, trimmed. */
/**
 * A query parameter's values, repeated or comma-separated, trimmed, empties dropped; `asSent` (what a
 * reader's filter is judged on, spec §7 #4–#6) neither trims nor drops them: " sent " is not `sent`.
 */
export function queryValuesOf(request: PolicyRequest, name: string, asSent = false): string[] {
  let raw: string[];
  if (request.query !== undefined) {
    const value = Object.hasOwn(request.query, name) ? request.query[name] : undefined;
    raw = value === undefined ? [] : typeof value === "string" ? [value] : [...value];
  } else {
    const at = request.path.indexOf("?");
    raw = at < 0 ? [] : new URLSearchParams(request.path.slice(at + 1)).getAll(name);
  }
  const parts = raw.flatMap((v) => v.split(","));
  // a name given with an empty list reads as one "" when judged as sent
  if (asSent && parts.length === 0 && request.query !== undefined && Object.hasOwn(request.query, name) && request.query[name] !== undefined) return [""];
  return asSent ? parts : parts.map((v) => v.trim()).filter((v) => v !== "");
}

/** JSON with object keys sorted at every level: two bodies are the same request exactly when these agree. */
function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  ) ?? "undefined";
}

/**
 * What an Idempotency-Key is bound to: the method, the decoded path (without query or trailing
 * slash), the query (a query object when given, else the path's query string; names in any order)
 * and the JSON body (keys in any order), and the descriptor's newsletter when the path names none.
 * Compared as text, never hashed: the model of the engine's
 * SHA-256 fingerprint.
 */
export function fingerprintOf(request: PolicyRequest): string {
  const [rawPath, rawQuery] = request.path.split("#")[0]!.split("?") as [string, string | undefined];
  const path = rawPath.replace(/\/$/, "");
  const query = new Map<string, string[]>();
  const entries: [string, string][] =
    request.query !== undefined
      ? Object.entries(request.query).flatMap(([name, v]) => (typeof v === "string" ? [[name, v] as [string, string]] : v.map((x) => [name, x] as [string, string])))
      : [...new URLSearchParams(rawQuery ?? "")];
  for (const [name, value] of entries) query.set(name, [...(query.get(name) ?? []), value]);
  const queryText = JSON.stringify([...query].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  // the descriptor's newsletter is part of the request when the path does not name one (every
  // catalogue path that names one starts /newsletters/{newsletter})
  const newsletter = path.startsWith("/newsletters/") ? "" : ` ${JSON.stringify(request.newsletter ?? null)}`;
  return `${request.method.toUpperCase()} ${path.split("/").map((s) => decodeURIComponent(s)).join("/")} ${queryText} ${sortedJson(request.body)}${newsletter}`;
}

/** The decisions the plan makes before any counter (route, reach, permission, input). */
export const isPlanRefusal = (d: Decision): boolean => ["malformed_request", "unknown_operation", "no_reach", "insufficient_scope", "invalid_input"].includes(d.reason.rule);
