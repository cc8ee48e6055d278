import { emptyUsage, evaluate, type Credential, type Decision, type PolicyConfig, type PolicyOptions, type PolicyRequest, type Roles, type Usage } from "../src/index.js";

/** 2026-11-22 10:00:00 UTC: fourteen hours before the daily caps reset. */
export const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

export function key(newsletters: Credential["newsletters"], account = false, id = "key_1"): Credential {
  return { id, kind: "api_key", newsletters, account };
}

/** A session over the pure API: keeps the usage and the clock between calls. */
export class Session {
  usage: Usage = emptyUsage();
  now = T0;
  constructor(
    public credential: Credential,
    public roles: Roles,
    public config?: PolicyConfig | PolicyOptions,
  ) {}

  run(request: Partial<PolicyRequest> | unknown): Decision {
    const { decision, usage } = evaluate(request as PolicyRequest, { credential: this.credential, roles: this.roles, usage: this.usage, now: this.now, ...(this.config && { config: this.config }) });
    this.usage = usage;
    return decision;
  }

  /** Runs the same request n times and returns the decisions. */
  repeat(n: number, request: unknown): Decision[] {
    return Array.from({ length: n }, () => this.run(request));
  }

  advance(seconds: number): void {
    this.now += seconds * 1000;
  }
}

export const get = (path: string, extra: Partial<PolicyRequest> = {}): PolicyRequest => ({ method: "GET", path, ...extra });
export const post = (path: string, extra: Partial<PolicyRequest> = {}): PolicyRequest => ({ method: "POST", path, ...extra });

/**
 * Changes after which `evaluate`'s sweep (src/prune.ts `sweepSlot`: one more leaf per change, the 256
 * buckets in turn, a split bucket's leaves one per visit) has visited every leaf of a snapshot whose
 * buckets split once: 256 × 16 leaves, and one more round of the buckets for the visit in progress.
 */
export const SWEEP_ONCE_SPLIT = 256 * 16 + 256;

/** The path to the first object below `value` that is not frozen, or undefined when all are. */
export function unfrozenPath(value: unknown, path = "usage"): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  if (!Object.isFrozen(value)) return path;
  for (const k of Object.keys(value)) {
    const found = unfrozenPath((value as Record<string, unknown>)[k], `${path}.${k}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * `value` with MemoryStore's cap-charge names (`m<the store's tag>.<n>`) written as a single Redis
 * primary writes them (`m<n>`): both count from 1 in the order they charge, so the same charges
 * have the same n; only MemoryStore's tag (which keeps another store's tickets from naming its
 * charges) differs.
 */
export function plainMembers<T>(value: T): T {
  if (value === undefined) return value;
  return JSON.parse(JSON.stringify(value).replace(/(["":])m[0-9a-z]+\.(\d+)"/g, '$1m$2"')) as T;
}
