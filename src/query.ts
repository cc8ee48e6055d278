/**
 * Reading a request's query, from its query string or a `query` object, into a bounded Map of
 * name → values; and reading values out of it.
 */
import { BOUNDS } from "./bounds.js";
import { decode, inheritsNothing, isArray, ownNames, ownValue, readStrings, UNREADABLE } from "./safe-read.js";

/**
 * A query-string part: `+` is a space, then percent-decoding; the common plain part costs nothing.
 * A part that cannot be decoded (`50%`, `caf%E9`) is kept as written, as qs does and as the
 * frameworks serve it: judged as that text (a reader's `status=%ZZ` is not `sent`), never a 400 of
 * its own (found by a regression check: Express, Fastify and Hono serve such queries).
 */
function decodePart(part: string): string {
  const spaced = part.includes("+") ? part.replace(/\+/g, " ") : part;
  return spaced.includes("%") ? (decode(spaced) ?? spaced) : spaced;
}

/**
 * The names a server may hand a handler for one query name. Flat parsers (URLSearchParams,
 * node:querystring, Express 5's default, Fastify's, Hono's) keep the name as it is; qs (Express 4's
 * default, the `extended` setting of Express 5) reads `status[]` and `status[3]` (an index below its
 * array limit of 20) as the list `status`, a leading bracket group `[status]` (also sent as `%5Bstatus%5D`) as `status`, and with
 * its `allowDots` option `.status` as `status`. A name is checked under every one of these, so no
 * parser hands a handler a filter or expand value the policy did not judge (spec §7 #4–#7; found:
 * "bracketed query names get past the reader view and expand checks").
 *
 * Any other name with a bracket or a dot is one qs may read as an object under its parent:
 * `status[$ne]=sent` is `{ status: { $ne: "sent" } }`, which a handler that builds a database
 * query reads as "status is not sent" (found by a black-box review: a read-only key listed drafts
 * so). Such a name is not read at all: {@link qsNames} gives undefined and the query is refused 400
 * naming the parent, as a parsed query object holding an object value is.
 */
const PLAIN_QS = /^(?:([^[\].]+)|\[([^[\].]+)\]|\.([^[\].]+))(?:\[\]|\[1?\d\])?$/;

function qsNames(name: string): string[] | undefined {
  const plain = PLAIN_QS.exec(name);
  if (plain === null) return undefined;
  const parent = plain[1] ?? plain[2] ?? plain[3]!;
  return parent === name ? [name] : [name, parent];
}

/** The parameter a refused name is about: qs's parent (the text before the first bracket or dot, or a leading group's), else the name. */
function qsParent(name: string): string {
  const head = /^[^[\].]*/.exec(name)![0];
  const lead = /^[[.]+([^[\].]*)/.exec(name)?.[1];
  return (head !== "" ? head : lead !== undefined && lead !== "" ? lead : name).slice(0, 64);
}

/**
 * Why a field of the descriptor could not be judged (a query that could not be read, and in
 * request.ts any other field): the parameter named, and what is wrong with it.
 */
export interface FieldProblem {
  readonly param: string;
  readonly detail: string;
}

function objectShaped(name: string): FieldProblem {
  const shown = name.slice(0, 64);
  return { param: qsParent(name), detail: `must be a string or a list of strings: qs-style parsers read "${shown}" under "${qsParent(name)}" as an object or a list this policy does not judge; send the plain name` };
}

/** Adds `value` under every name a parser may read `name` as; a problem when one reads it as an object. */
function add(query: Map<string, string[]>, name: string, value: string): FieldProblem | undefined {
  // the common plain name costs one scan
  const names = name.includes("[") || name.includes("]") || name.includes(".") ? qsNames(name) : [name];
  if (names === undefined) return objectShaped(name);
  for (const each of names) {
    const list = query.get(each);
    if (list) list.push(value);
    else query.set(each, [value]);
  }
  return undefined;
}

/**
 * A name's encoded brackets (`%5B`, `%5D`, either case) as brackets, before it is decoded: qs reads
 * them so across the whole query string first, so `status%5B%5D%` (a stray `%` after them, which
 * makes the name undecodable) is `status[]` to it, and `status` to a handler, while decoding the name
 * whole failed and kept it as written, a name the reader-filter and expand checks never looked at
 * (found by an oracle review: a read-only key listed drafts with `?status%5B%5D%=draft`). Encoded
 * dots likewise: qs decoding as ISO-8859-1 (its `charset` option, or a client's own `utf8=` charset
 * sentinel) decodes `%2E` in a name that is no UTF-8 (`status%2E%24ne%2E%FF`), and with `allowDots`
 * splits it (found by a query-parser review). A name that decodes is the same either way.
 */
function encodedBrackets(name: string): string {
  return name.includes("%") ? name.replace(ENCODED_STRUCTURE, (code) => STRUCTURE[code.toUpperCase()]!) : name;
}

const ENCODED_STRUCTURE = /%5B|%5D|%2E/gi;
const STRUCTURE: Readonly<Record<string, string>> = { "%5B": "[", "%5D": "]", "%2E": "." };

/** qs's array limit: past this many values under one name, qs hands a handler an object keyed by index. */
const QS_ARRAY_LIMIT = 20;

/**
 * A query string read into name → values, or why it cannot be read. A query string that begins
 * with another `?` (`??status=draft`) has its first name judged both as written and without that
 * `?`: URLSearchParams and qs's `ignoreQueryPrefix` drop it, so a handler reads `status` (found by a
 * query-parser review: a read-only key listed drafts through Express with a URLSearchParams parser).
 * A name given more than {@link QS_ARRAY_LIMIT} times is refused as one qs reads as an object.
 */
export function readQueryString(text: string): Map<string, string[]> | FieldProblem {
  const query = new Map<string, string[]>();
  let first = true;
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const name = decodePart(encodedBrackets(rawName));
    const value = eq < 0 ? "" : decodePart(pair.slice(eq + 1));
    const problem = add(query, name, value) ?? (first && rawName.startsWith("?") ? add(query, decodePart(encodedBrackets(rawName.slice(1))), value) : undefined);
    if (problem !== undefined) return problem;
    first = false;
  }
  for (const [name, values] of query) if (values.length > QS_ARRAY_LIMIT) return tooMany(name);
  return query;
}

function tooMany(name: string): FieldProblem {
  return { param: qsParent(name), detail: `must be given at most ${QS_ARRAY_LIMIT} times: qs-style parsers read more as an object, not a list` };
}

/**
 * Whether an object holds its parameters as its own properties: every prototype on its chain is
 * `Object.prototype` or has no members of its own (qs's and node:querystring's objects, and
 * fast-querystring's, whose prototype is an empty object without a prototype, all do). A
 * URLSearchParams or a Map keeps its entries elsewhere and a class instance's prototype has members:
 * read by their own properties they would show no parameters, and a handler that reads them
 * (`req.query.get("status")`) would get values the policy never judged (found by a review).
 */
export function holdsOwnParameters(query: unknown): boolean {
  if (typeof query !== "object" || query === null) return true; // not an object: the policy refuses it (400), naming query
  try {
    return inheritsNothing(query, (proto) => proto === Object.prototype);
  } catch {
    return false; // a Proxy's trap that throws
  }
}

export function readQueryObject(query: object): Map<string, string[]> | FieldProblem {
  if (isArray(query) !== false) return { param: "query", detail: "must be an object of name → string or list of strings" };
  if (!holdsOwnParameters(query)) {
    return { param: "query", detail: "must be a plain object of name → string or list of strings (a URLSearchParams or a Map: pass Object.fromEntries of it, or the raw query string in path)" };
  }
  const names = ownNames(query, BOUNDS.queryParams);
  if (names === null) return { param: "query", detail: `must be a readable object of at most ${BOUNDS.queryParams} parameters` };
  const out = new Map<string, string[]>();
  let count = 0;
  for (const name of names) {
    const shown = name.slice(0, 64);
    if (name.length > BOUNDS.queryName) return { param: "query", detail: `has a parameter name longer than ${BOUNDS.queryName} characters` };
    const value = ownValue(query, name);
    if (typeof value === "string") {
      if (value.length > BOUNDS.queryValue) return { param: shown, detail: `must be at most ${BOUNDS.queryValue} characters` };
      if (++count > BOUNDS.queryParams) return { param: "query", detail: `must have at most ${BOUNDS.queryParams} parameters` };
      const problem = add(out, name, value);
      if (problem !== undefined) return problem;
      continue;
    }
    if (value === null || typeof value !== "object" || isArray(value) !== true) return { param: shown, detail: "must be a string or a list of strings" };
    const values = readStrings(value, BOUNDS.queryParams - count, BOUNDS.queryValue);
    if (typeof values === "string") return { param: shown, detail: `must be a string or a list of strings; it ${values}` };
    count += values.length;
    for (const v of values) {
      const problem = add(out, name, v);
      if (problem !== undefined) return problem;
    }
  }
  return out;
}


/** Non-empty `&`-separated parts of a query string (at most 4096 characters: bounded by the path). */
export function countParts(text: string): number {
  let count = 0;
  let start = 0;
  for (;;) {
    const end = text.indexOf("&", start);
    if ((end < 0 ? text.length : end) > start) count++;
    if (end < 0) return count;
    start = end + 1;
  }
}

/** No values: what an absent parameter gives, one frozen list rather than a new one per request. */
const NO_VALUES: readonly string[] = Object.freeze([]);

/** A name given without any value: one empty value, as a reader's filter is judged on it. */
const EMPTY_VALUE: readonly string[] = Object.freeze([""]);

/**
 * The values of a query parameter, repeated or comma-separated, trimmed, empties dropped; or, `asSent`
 * (what a reader-restricted filter is judged on, spec §7 #4–#6), neither trimmed nor dropped when
 * empty, and a name given without any value reads as one "": `?status=` and `?status=sent%20` are
 * statuses other than `sent`, and `?tag=` uses the tag filter, whatever a handler makes of them.
 */
export function queryValues(query: ReadonlyMap<string, readonly string[]>, name: string, asSent = false): readonly string[] {
  const raw = query.get(name);
  if (raw === undefined) return NO_VALUES;
  if (asSent && raw.length === 0) return EMPTY_VALUE;
  const values: string[] = [];
  for (const entry of raw) {
    for (const part of entry.split(",")) {
      if (asSent) values.push(part);
      else {
        const value = part.trim();
        if (value !== "") values.push(value);
      }
    }
  }
  return values;
}
