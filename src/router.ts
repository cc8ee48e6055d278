/**
 * Routing: the route table built from the compiled operations, and matching a request against it.
 * The only place that knows how a path finds its operation.
 */
import { PolicyConfigError } from "./errors.js";
import { isBuiltIn, type CompiledOperation, type OperationEntry } from "./operations.js";
import type { NormalRequest } from "./request.js";

/**
 * Method → segment count → the operations of that shape, more literal segments first. Looked up by
 * the method and the count as they are: no key string is built per request.
 */
export type RouteTable = ReadonlyMap<string, readonly (readonly CompiledOperation[] | undefined)[]>;

/**
 * Two template segments (a word, or null for a parameter) a router that ignores case (Express) reads
 * as the same: two parameters, or one word in any case.
 */
function sameSegment(a: string | null | undefined, b: string | null | undefined): boolean {
  return a === null || b === null ? a === b : a !== undefined && b !== undefined && a.toLowerCase() === b.toLowerCase();
}

/** Two template segments one request word can match: either is a parameter, or they are the same word. */
function canMeet(a: string | null | undefined, b: string | null | undefined): boolean {
  return a === null || b === null || sameSegment(a, b);
}

/**
 * Builds the route table. Two operations may not share an id or match the same requests.
 *
 * @param operations - compiled, in catalogue order.
 * @param entries - where each came from, for errors (same order).
 */
export function buildRoutes(operations: readonly CompiledOperation[], entries: readonly OperationEntry[]): RouteTable {
  const routes = new Map<string, (CompiledOperation[] | undefined)[]>();
  const ids = new Set<string>();
  const builtIns = new Set<CompiledOperation>();
  operations.forEach((op, i) => {
    const field = entries[i]!.field;
    if (ids.has(op.id)) throw new PolicyConfigError(`${field}.id`, `repeats the id "${op.id}"`);
    ids.add(op.id);
    if (isBuiltIn(entries[i]!)) builtIns.add(op);
    let byCount = routes.get(op.spec.method);
    if (byCount === undefined) routes.set(op.spec.method, (byCount = []));
    const list = (byCount[op.segments.length] ??= []);
    // the same words whatever their case are the same requests to a router that ignores case (Express)
    const clash = list.find((other) => other.segments.every((s, j) => sameSegment(s, op.segments[j])));
    if (clash) throw new PolicyConfigError(`${field}.path`, `matches the same requests as "${clash.id}"`);
    // A host operation sits beside the built-ins, never over them: one that can match a built-in's
    // requests with more fixed words is matched first, and the built-in's permission, budgets, daily
    // cap and newsletter check would not run for them (found by a review: a credential without
    // grants listed subscribers, and 40 sends went past a cap of 25). Built-ins come first. Words
    // are compared whatever their case: Express routes /Articles/a/send to an /articles/:id/send
    // handler, so a host's POST /Articles/{article}/send sent without sending: write and past the
    // daily cap (found by a permissions review).
    const shadowed = builtIns.has(op) ? undefined : list.find((other) => builtIns.has(other) && other.segments.every((s, j) => canMeet(s, op.segments[j])));
    if (shadowed) {
      throw new PolicyConfigError(`${field}.path`, `matches requests of the built-in "${shadowed.id}" (${shadowed.spec.method} ${shadowed.spec.path}), whose rules must hold for them (spec §4); choose a path no built-in matches`);
    }
    // Literal segments win over parameters: more literals first.
    list.push(op);
    list.sort((a, b) => b.segments.filter((s) => s !== null).length - a.segments.filter((s) => s !== null).length);
  });
  // holes become undefined, so every lookup reads a packed array
  for (const [method, byCount] of routes) routes.set(method, Array.from(byCount));
  return routes;
}

/**
 * The last route found and what it was found from: the table, the method and the path's segments
 * as read (by identity: request.ts reads each recent path once, into segments it freezes, so the
 * same array holds the same words), so a path asked again, as most are, is not matched again. Any
 * other request is matched afresh.
 */
const last: { routes: RouteTable | undefined; method: string; segments: readonly string[] | undefined; op: CompiledOperation | undefined } = {
  routes: undefined,
  method: "",
  segments: undefined,
  op: undefined,
};

/** The operation a request names, or undefined (DESIGN §11: unknown operations fail closed). */
export function route(routes: RouteTable, request: Pick<NormalRequest, "method" | "segments">): CompiledOperation | undefined {
  const segments = request.segments;
  if (segments === last.segments && request.method === last.method && routes === last.routes) return last.op;
  const op = match(routes, request);
  last.routes = routes;
  last.method = request.method;
  last.segments = segments;
  last.op = op;
  return op;
}

function match(routes: RouteTable, request: Pick<NormalRequest, "method" | "segments">): CompiledOperation | undefined {
  const byCount = routes.get(request.method);
  const count = request.segments.length;
  if (byCount === undefined || count >= byCount.length) return undefined;
  const candidates = byCount[count];
  if (candidates === undefined) return undefined;
  outer: for (const op of candidates) {
    for (let i = 0; i < op.segments.length; i++) {
      const literal = op.segments[i];
      if (literal !== null && literal !== request.segments[i]) continue outer;
    }
    return op;
  }
  return undefined;
}

/** The same table over other compiled operations (e.g. with other budget sizes, see limits.ts). */
export function remapRoutes(routes: RouteTable, replace: (op: CompiledOperation) => CompiledOperation): RouteTable {
  const next = new Map<string, readonly (readonly CompiledOperation[] | undefined)[]>();
  for (const [method, byCount] of routes) next.set(method, byCount.map((list) => (list === undefined ? undefined : Object.freeze(list.map(replace)))));
  return next;
}
