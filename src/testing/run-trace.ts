/**
 * Running a {@link Trace} through the pure API (`evaluate` over immer snapshots) or through a
 * stateful policy (`createPolicy` over a store), step by step, with a log of what each step saw.
 */
import { evaluate, release } from "../evaluate.js";
import { emptyUsage, type Usage } from "../snapshot.js";
import { capMembers } from "../snapshot.js";
import { createPolicy } from "../policy.js";
import type { PolicyStore } from "../store.js";
import type { Credential, Decision, PolicyRequest, RateLimitStatus } from "../types.js";
import type { Trace, TraceStep } from "./arbitraries/traces.js";

/** What one step of a trace did. `now` is the clock at the step. */
export type TraceEntry =
  | {
      readonly kind: "request";
      readonly index: number;
      readonly now: number;
      readonly credential: Credential;
      /** The owner's roles when the request was decided (a copy). */
      readonly roles: Readonly<Record<string, string>>;
      /** The request as sent (with the injected `requestId`, if any). */
      readonly request: PolicyRequest;
      readonly operation: string | undefined;
      readonly decision: Decision;
      /** Pure runs only: the counters before and after. */
      readonly before?: Usage;
      readonly after?: Usage;
    }
  | {
      readonly kind: "release";
      readonly index: number;
      readonly now: number;
      /** The decision released; undefined when no earlier decision carried a ticket. */
      readonly released: Decision | undefined;
      /** Whether the charge was still counted and the release uncounted it (as `PolicyStore.release` answers). */
      readonly uncounted: boolean;
      readonly before?: Usage;
      readonly after?: Usage;
    }
  | { readonly kind: "status"; readonly index: number; readonly now: number; readonly credential: Credential; readonly status: RateLimitStatus | undefined }
  | { readonly kind: "advance" | "role"; readonly index: number; readonly now: number };

/** Options of the trace runners. */
export interface RunTraceOptions {
  /** Give every request the id `req_t<step index>`, so that two runs of one trace produce the same ids. Default false. */
  requestIds?: boolean;
}

/** What the step loop asks its driver to do. */
type Call =
  | { readonly kind: "check"; readonly request: PolicyRequest; readonly credential: Credential; readonly rolesOf: (newsletter: string) => string | undefined; readonly snapshot: Record<string, string>; readonly now: number }
  | { readonly kind: "release"; readonly decision: Decision; readonly now: number }
  | { readonly kind: "status"; readonly credential: Credential; readonly now: number };

interface CheckResult {
  decision: Decision;
  before?: Usage;
  after?: Usage;
}
interface ReleaseResult {
  uncounted: boolean;
  before?: Usage;
  after?: Usage;
}

/**
 * The step loop, once, as a generator: it yields each call and is resumed with the result, so the
 * pure driver runs it synchronously and the store driver with `await`.
 */
function* steps(trace: Trace, options: RunTraceOptions): Generator<Call, TraceEntry[], unknown> {
  let now = trace.start;
  const roles = trace.roles.map((r) => new Map(Object.entries(r)));
  const tickets: Decision[] = [];
  const log: TraceEntry[] = [];
  for (let index = 0; index < trace.steps.length; index++) {
    const step: TraceStep = trace.steps[index]!;
    switch (step.kind) {
      case "advance":
        now += step.ms;
        log.push({ kind: "advance", index, now });
        break;
      case "role":
        const of = roles[step.credential % trace.credentials.length]!;
        if (step.role === undefined) of.delete(step.newsletter);
        else of.set(step.newsletter, step.role);
        log.push({ kind: "role", index, now });
        break;
      case "request": {
        const who = step.credential % trace.credentials.length;
        const credential = trace.credentials[who]!;
        const current = roles[who]!;
        const snapshot = Object.fromEntries(current) as Record<string, string>;
        const request = options.requestIds ? { ...step.request, requestId: `t${index}` } : step.request;
        const result = (yield { kind: "check", request, credential, rolesOf: (n) => current.get(n), snapshot, now }) as CheckResult;
        if (result.decision.release !== undefined) tickets.push(result.decision);
        log.push({ kind: "request", index, now, credential, roles: snapshot, request, operation: step.operation, ...result });
        break;
      }
      case "release": {
        const released = tickets.length === 0 ? undefined : tickets[step.pick % tickets.length];
        if (released === undefined) log.push({ kind: "release", index, now, released, uncounted: false });
        else log.push({ kind: "release", index, now, released, ...((yield { kind: "release", decision: released, now }) as ReleaseResult) });
        break;
      }
      case "status": {
        const credential = trace.credentials[step.credential % trace.credentials.length]!;
        log.push({ kind: "status", index, now, credential, status: (yield { kind: "status", credential, now }) as RateLimitStatus | undefined });
        break;
      }
    }
  }
  return log;
}

/**
 * Runs a trace through the pure API: `evaluate` and `release` over immer snapshots, starting from
 * `emptyUsage()`, each request with the owner's roles as a plain object. Request and release
 * entries carry the counters before and after.
 *
 * @param trace - from {@link arbTrace}.
 * @param options - `requestIds` (default false: ids are derived from the inputs).
 * @returns one entry per step.
 * @example
 * const log = runPureTrace(trace);
 * const refused = log.filter((e) => e.kind === "request" && !e.decision.allowed);
 */
export function runPureTrace(trace: Trace, options: RunTraceOptions = {}): TraceEntry[] {
  let usage: Usage = emptyUsage();
  const loop = steps(trace, options);
  let next = loop.next();
  while (!next.done) {
    const call = next.value;
    const before = usage;
    if (call.kind === "check") {
      const result = evaluate(call.request, { credential: call.credential, roles: call.snapshot, usage, now: call.now, config: trace.config });
      usage = result.usage;
      next = loop.next({ decision: result.decision, before, after: usage } satisfies CheckResult);
    } else if (call.kind === "release") {
      usage = release(usage, call.decision, call.now);
      // as a store's release(): true when the charge was still counted (the key record may change either way)
      const ticket = call.decision.release!;
      const counted = (u: Usage) => capMembers(u, ticket.key, ticket.day).includes(ticket.member);
      next = loop.next({ uncounted: counted(before) && !counted(usage), before, after: usage } satisfies ReleaseResult);
    } else {
      next = loop.next(undefined);
    }
  }
  return next.value;
}

/**
 * Runs a trace through `createPolicy` over a store, with the trace's clock and, per credential, a
 * roles function read on every check (so a role change applies to the next request).
 *
 * @param trace - from {@link arbTrace}.
 * @param store - a fresh store.
 * @param options - `requestIds` (default false; ids then come from a counter, `req_g1`, `req_g2`, …).
 * @returns one entry per step.
 * @example
 * const log = await runPolicyTrace(trace, new MemoryStore(), { requestIds: true });
 */
export async function runPolicyTrace(trace: Trace, store: PolicyStore, options: RunTraceOptions = {}): Promise<TraceEntry[]> {
  let now = trace.start;
  let ids = 0;
  const policy = createPolicy({ store, config: trace.config, clock: () => now, generateId: () => `g${++ids}` });
  const loop = steps(trace, options);
  let next = loop.next();
  while (!next.done) {
    const call = next.value;
    now = call.now;
    if (call.kind === "check") next = loop.next({ decision: await policy.check(call.request, { credential: call.credential, roles: call.rolesOf }) } satisfies CheckResult);
    else if (call.kind === "release") next = loop.next({ uncounted: await policy.release(call.decision) } satisfies ReleaseResult);
    else next = loop.next(await policy.status(call.credential));
  }
  return next.value;
}
