/**
 * Reading a request's query, from its query string or a `query` object, into a bounded Map of
 * name → values; and reading values out of it.
 */
import { BOUNDS } from "./bounds.js";
import { decode, isArray, ownNames, ownValue, readStrings, UNREADABLE } from "./safe-read.js";

/** A query-string part: `+` is a space, then percent-decoding; the common plain part costs nothing. */
function decodePart(part: string): string | null {
  const spaced = part.includes("+") ? part.replace(/\+/g, " ") : part;
  return spaced.includes("%") ? decode(spaced) : spaced;
}

/**
 * The names a server may hand a handler for one query name. Flat parsers (URLSearchParams,
 * node:querystring, Express 5's default, Fastify's, Hono's) keep the name as it is; qs (Express 4's
 * default, the `extended` setting of Express 5) reads `status[]`, `status[x]` and `status[` as
 * `status`, a leading bracket group `[status]` (also sent as `%5Bstatus%5D`) as `status`, and with
 * its `allowDots` option `status.x` and `.status` as `status`. A name is checked under every one of
 * these, so no parser hands a handler a filter or expand value the policy did not judge
 * (spec §7 #4–#7; found: "bracketed query names get past the reader view and expand checks").
 * Reading a name under more names than one parser would only ever refuses more, never less.
 */
function qsNames(name: string): string[] {
  const names = [name];
  const head = /^[^[.]*/.exec(name)![0]; // qs's parent: the text before the first "[" (or ".")
  if (head !== "" && head !== name) names.push(head);
  if (head === "") {
    // a leading "[status]" or ".status" (any run of "[" and "."), up to the next "[", "]" or "."
    const lead = /^[[.]+([^[\].]*)/.exec(name)![1]!;
    if (lead !== "" && lead !== name) names.push(lead);
  }
  return names;
}

function add(query: Map<string, string[]>, name: string, value: string): void {
  // the common plain name costs one scan
  const names = name.includes("[") || name.includes(".") ? qsNames(name) : [name];
  for (const each of names) {
    const list = query.get(each);
    if (list) list.push(value);
    else query.set(each, [value]);
  }
}

export function readQueryString(text: string): Map<string, string[]> | null {
  const query = new Map<string, string[]>();
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const name = decodePart(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? "" : decodePart(pair.slice(eq + 1));
    if (name === null || value === null) return null;
    add(query, name, value);
  }
  return query;
}

export function readQueryObject(query: object): Map<string, string[]> | { param: string; detail: string } {
  if (isArray(query) !== false) return { param: "query", detail: "must be an object of name → string or list of strings" };
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
      add(out, name, value);
      continue;
    }
    if (value === null || typeof value !== "object" || isArray(value) !== true) return { param: shown, detail: "must be a string or a list of strings" };
    const values = readStrings(value, BOUNDS.queryParams - count, BOUNDS.queryValue);
    if (typeof values === "string") return { param: shown, detail: `must be a string or a list of strings; it ${values}` };
    count += values.length;
    for (const v of values) add(out, name, v);
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

/** The values of a query parameter, repeated or comma-separated, trimmed, empties dropped. */
export function queryValues(query: ReadonlyMap<string, readonly string[]>, name: string): readonly string[] {
  const raw = query.get(name);
  if (raw === undefined) return NO_VALUES;
  const values: string[] = [];
  for (const entry of raw) {
    for (const part of entry.split(",")) {
      const value = part.trim();
      if (value !== "") values.push(value);
    }
  }
  return values;
}
