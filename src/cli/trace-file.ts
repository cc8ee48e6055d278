/**
 * Reading a trace file: JSON lines of requests `{ time, credential, roles, request }`, with
 * credentials defined once on their own line and named by id afterwards. Pure: no files, no clock.
 */
import { meantName } from "../host-input.js";
import type { Credential, Limits, PolicyRequest, Roles } from "../types.js";

/** One line of a trace (JSON lines): when, who, and what was asked. */
export interface TraceLine {
  /** ISO 8601 time, or ms since the epoch. */
  readonly time: string | number;
  readonly credential: Credential;
  /** The owner's roles per newsletter at that time. */
  readonly roles: Roles;
  readonly request: PolicyRequest;
  /** The plan's limits for this request (`who.limits`), when the service sells plans. */
  readonly limits?: Limits;
  /** Where it was in the trace file (1-based), for messages; absent for a line built in code. */
  readonly lineNumber?: number;
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
/** The fields of a request line, and of a line that defines a credential. */
const REQUEST_FIELDS = ["time", "credential", "roles", "request", "limits"];
const DEFINITION_FIELDS = ["credential", "roles", "limits"];

/**
 * A field a line may not have: a misspelling (`"limts"`, `"Request"`) was dropped without a word, and
 * the line replayed without what it meant to say (found by an operating review).
 */
function assertFields(value: Record<string, unknown>, known: readonly string[], n: number): void {
  for (const name of Object.keys(value)) {
    if (known.includes(name)) continue;
    const meant = meantName(name, known);
    throw new Error(`trace line ${n}: "${name.slice(0, 40)}" is not a field of a trace line${meant === undefined ? "" : `; did you mean ${meant}?`} (fields: ${known.join(", ")})`);
  }
}

export function parseTrace(lines: readonly string[]): TraceLine[] {
  const known = new Map<string, { credential: Credential; roles: Roles; limits: unknown }>();
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
    if (Array.isArray(value)) throw new Error(`trace line ${n}: must be an object`);
    if (value.request === undefined && typeof value.credential === "object" && value.credential !== null && value.time === undefined) {
      assertFields(value, DEFINITION_FIELDS, n);
      const credential = value.credential as Credential;
      if (typeof credential.id !== "string") throw new Error(`trace line ${n}: credential must have an id`);
      known.set(credential.id, { credential, roles: (value.roles ?? {}) as Roles, limits: value.limits });
      return;
    }
    assertFields(value, REQUEST_FIELDS, n);
    if (typeof value.credential === "string") {
      const defined = known.get(value.credential);
      if (defined === undefined) throw new Error(`trace line ${n}: credential "${value.credential}" is not defined on an earlier line`);
      value = { ...value, credential: defined.credential, roles: value.roles ?? defined.roles };
      // the plan the definition gave, unless the line gives its own
      if (value.limits === undefined && defined.limits !== undefined) value.limits = defined.limits;
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
  if (line.limits !== undefined && (typeof line.limits !== "object" || line.limits === null || Array.isArray(line.limits))) throw fail("limits", "the plan's limits { budgets?, caps? }");
  return { ...(line as TraceLine), lineNumber };
}

/** A line's time in ms since the epoch. */
export function timeOf(line: TraceLine): number {
  return typeof line.time === "number" ? line.time : Date.parse(line.time);
}
