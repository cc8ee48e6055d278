/**
 * Reading the untrusted request descriptor. Nothing here throws: a descriptor of any shape becomes
 * either a normalised request or the field that made it malformed.
 *
 * The descriptor is read once, defensively: each field through its own property descriptor (own
 * data properties only, so no getter and no prototype runs), inside try/catch (a Proxy's traps may
 * throw), into plain values, with every size bounded before any work that grows with it. Whatever
 * cannot be read is a 400 `invalid_request` naming the field. See docs/security.md for the bounds.
 */
import type { ListField } from "./catalogue.js";

/** A descriptor after normalisation. */
export interface NormalRequest {
  /** Upper case; HEAD is read as GET. */
  readonly method: string;
  /** Decoded path segments, none empty, none `.` or `..`. */
  readonly segments: readonly string[];
  /** The decoded path without its query or a trailing slash, for messages and idempotency fingerprints. */
  readonly path: string;
  readonly query: ReadonlyMap<string, readonly string[]>;
  readonly idempotencyKey: unknown;
  readonly body: unknown;
  readonly newsletter: string | undefined;
  readonly requestId: string | undefined;
}

/** Why a descriptor could not be read. */
export interface Malformed {
  readonly param: string;
  readonly detail: string;
  /** What could be read of it, for messages. */
  readonly method: string;
  readonly path: string;
}

/** Bounds on what is read of a descriptor (docs/security.md). */
export const BOUNDS = Object.freeze({
  /** `path`, with its query string. */
  path: 4096,
  /** `method`. */
  method: 16,
  /** Query parameters (names, counting a repeated name once per value) in `query` or the query string. */
  queryParams: 100,
  /** One query name. */
  queryName: 256,
  /** One query value. */
  queryValue: 4096,
  /** `newsletter`. */
  newsletter: 256,
  /** `idempotencyKey` (spec: 1 to 255 visible ASCII characters; longer is refused, never read further). */
  idempotencyKey: 255,
  /** One address in a test send's `to` (RFC 5321: 254). */
  address: 254,
  /** One id in a body list such as tagging's `subscribers`. */
  listId: 255,
});

const MAX_PATH = BOUNDS.path;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f\\]/;
const EMPTY_QUERY: ReadonlyMap<string, readonly string[]> = new Map();

function decode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** A query-string part: `+` is a space, then percent-decoding; the common plain part costs nothing. */
function decodePart(part: string): string | null {
  const spaced = part.includes("+") ? part.replace(/\+/g, " ") : part;
  return spaced.includes("%") ? decode(spaced) : spaced;
}

function readSegments(path: string): string[] | string {
  // One scan of the raw path for characters no id may hold; decoded segments are checked again below.
  if (FORBIDDEN.test(path)) return "has a control character or a backslash";
  const parts = path.split("/");
  let end = parts.length;
  if (end > 1 && parts[end - 1] === "") end--; // one trailing slash
  const segments: string[] = [];
  for (let i = 1; i < end; i++) {
    const raw = parts[i]!;
    if (raw === "") return "has an empty segment";
    let segment = raw;
    if (raw.includes("%")) {
      const decoded = decode(raw);
      if (decoded === null) return "has invalid percent-encoding";
      // Decoded slashes, backslashes and control characters would let an id walk the path.
      if (decoded.includes("/") || FORBIDDEN.test(decoded)) return `has a segment that is not an id: "${raw}"`;
      segment = decoded;
    }
    if (segment === "." || segment === "..") return `has a segment that is not an id: "${raw}"`;
    segments.push(segment);
  }
  return segments;
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

function readQueryString(text: string): Map<string, string[]> | null {
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

/** An own data property, read once; `UNREADABLE` when it is an accessor or a trap throws. */
const UNREADABLE: unique symbol = Symbol("unreadable");

function ownValue(object: object, name: string): unknown {
  try {
    const property = Object.getOwnPropertyDescriptor(object, name);
    if (property === undefined) return undefined;
    return "value" in property ? property.value : UNREADABLE;
  } catch {
    return UNREADABLE;
  }
}

function isArray(value: unknown): boolean | typeof UNREADABLE {
  try {
    return Array.isArray(value); // throws for a revoked Proxy
  } catch {
    return UNREADABLE;
  }
}

/**
 * The strings of an array, read defensively: its own `length` (at most `max`) first, then each
 * index as an own data property. A hole, a getter, a trap that throws or a non-string is refused.
 */
function readStrings(array: object, max: number, maxLength: number): string[] | string {
  const length = ownValue(array, "length");
  if (typeof length !== "number" || !Number.isInteger(length) || length < 0) return "is not a readable list";
  if (length > max) return `has more than ${max} entries`;
  const out: string[] = [];
  for (let i = 0; i < length; i++) {
    const value = ownValue(array, String(i));
    if (typeof value !== "string") return value === undefined ? "has a hole" : "must hold strings only";
    if (value.length > maxLength) return `has an entry longer than ${maxLength} characters`;
    out.push(value);
  }
  return out;
}

/** The names of an object's own enumerable properties, at most `max` (counting stops there). */
function ownNames(object: object, max: number): string[] | null {
  const names: string[] = [];
  try {
    for (const name in object) {
      if (!Object.hasOwn(object, name)) continue; // inherited (prototype) keys are not the request's
      if (names.length === max) return null;
      names.push(name);
    }
  } catch {
    return null;
  }
  return names;
}

function readQueryObject(query: object): Map<string, string[]> | { param: string; detail: string } {
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

/**
 * A descriptor's fields, each read once into a plain value, or the first field that could not be
 * read. Frozen; recognised by {@link normaliseRequest}, so that reading it again costs nothing.
 */
export interface DescriptorRead {
  readonly method: unknown;
  readonly path: unknown;
  /** `query`, read into a plain Map (bounded), or why it could not be; undefined when absent. */
  readonly query: ReadonlyMap<string, readonly string[]> | { readonly param: string; readonly detail: string } | undefined;
  readonly idempotencyKey: unknown;
  readonly body: unknown;
  readonly newsletter: unknown;
  readonly requestId: unknown;
  /** The first field that could not be read (a getter, or a Proxy trap that threw). */
  readonly unreadable: string | undefined;
}

const reads = new WeakSet<object>();
const FIELDS = ["method", "path", "query", "idempotencyKey", "body", "newsletter", "requestId"] as const;
const SHOWN: Record<(typeof FIELDS)[number], string> = {
  method: "method",
  path: "path",
  query: "query",
  idempotencyKey: "Idempotency-Key",
  body: "body",
  newsletter: "newsletter",
  requestId: "requestId",
};

/**
 * Reads a descriptor of any shape once: own data properties only, no getter run, every trap inside
 * try/catch. Never throws.
 */
export function readDescriptor(input: unknown): DescriptorRead {
  if (typeof input === "object" && input !== null && reads.has(input)) return input as DescriptorRead;
  const out: Record<string, unknown> = { unreadable: undefined };
  const object = typeof input === "object" && input !== null ? input : typeof input === "function" ? input : undefined;
  for (const field of FIELDS) {
    const value = object === undefined ? undefined : ownValue(object, field);
    if (value === UNREADABLE) {
      out[field] = undefined;
      out.unreadable ??= SHOWN[field];
    } else out[field] = value;
  }
  const query = out.query;
  if (query !== undefined) {
    out.query =
      typeof query !== "object" || query === null
        ? { param: "query", detail: "must be an object of name → string or list of strings" }
        : readQueryObject(query);
  }
  const read = Object.freeze(out) as unknown as DescriptorRead;
  reads.add(read);
  return read;
}

/** Reads a descriptor of any shape. */
export function normaliseRequest(input: unknown): NormalRequest | Malformed {
  const request = readDescriptor(input);
  const rawMethod = request.method;
  const rawPath = request.path;
  const shownPath = typeof rawPath === "string" ? rawPath.slice(0, 200) : "?";
  if (request.unreadable !== undefined) {
    return { param: request.unreadable, detail: "could not be read: pass a plain value (a getter or a Proxy that throws is not read)", method: "?", path: shownPath };
  }
  if (typeof rawMethod !== "string" || rawMethod.length > BOUNDS.method || !/^[A-Za-z]{1,16}$/.test(rawMethod)) {
    return { param: "method", detail: "must be an HTTP method", method: "?", path: shownPath };
  }
  const upper = rawMethod.toUpperCase();
  const method = upper === "HEAD" ? "GET" : upper;
  if (typeof rawPath !== "string" || !rawPath.startsWith("/") || rawPath.length > MAX_PATH) {
    return { param: "path", detail: `must be a string starting with "/" of at most ${MAX_PATH} characters`, method, path: shownPath };
  }
  const hash = rawPath.indexOf("#");
  const withQuery = hash < 0 ? rawPath : rawPath.slice(0, hash);
  const mark = withQuery.indexOf("?");
  const segments = readSegments(mark < 0 ? withQuery : withQuery.slice(0, mark));
  if (typeof segments === "string") return { param: "path", detail: segments, method, path: shownPath };

  let query: ReadonlyMap<string, readonly string[]> = EMPTY_QUERY;
  if (request.query !== undefined) {
    const read = request.query;
    if (!(read instanceof Map)) {
      const bad = read as { param: string; detail: string };
      return { param: bad.param, detail: bad.detail, method, path: shownPath };
    }
    query = read;
  } else if (mark >= 0) {
    const text = withQuery.slice(mark + 1);
    if (countParts(text) > BOUNDS.queryParams) return { param: "query", detail: `must have at most ${BOUNDS.queryParams} parameters`, method, path: shownPath };
    const read = readQueryString(text);
    if (read === null) return { param: "query", detail: "has invalid percent-encoding", method, path: shownPath };
    query = read;
  }

  const rawNewsletter = request.newsletter;
  if (typeof rawNewsletter === "string" && rawNewsletter.length > BOUNDS.newsletter) {
    return { param: "newsletter", detail: `must be at most ${BOUNDS.newsletter} characters`, method, path: shownPath };
  }
  const requestId = typeof request.requestId === "string" && REQUEST_ID.test(request.requestId) ? request.requestId : undefined;
  return {
    method,
    segments,
    path: "/" + segments.join("/"),
    query,
    idempotencyKey: request.idempotencyKey,
    body: request.body,
    newsletter: typeof rawNewsletter === "string" && rawNewsletter !== "" ? rawNewsletter : undefined,
    requestId,
  };
}

/** Non-empty `&`-separated parts of a query string (at most 4096 characters: bounded by the path). */
function countParts(text: string): number {
  let count = 0;
  let start = 0;
  for (;;) {
    const end = text.indexOf("&", start);
    if ((end < 0 ? text.length : end) > start) count++;
    if (end < 0) return count;
    start = end + 1;
  }
}

// One address: exactly one @, something on each side, no separators (comma, semicolon, whitespace), no controls.
// eslint-disable-next-line no-control-regex
const ADDRESS = /^[^@,;\s\u0000-\u001f\u007f]+@[^@,;\s\u0000-\u001f\u007f]+$/u;

/**
 * A bounded list field of the JSON body (test send `to`, tagging `subscribers`), read defensively:
 * the body and the list through own data properties only, the list's length checked against
 * `list.max` before any entry is read, and each entry one non-empty string (one address, for a list
 * of addresses). Never throws.
 *
 * @returns the entries, or why the field is invalid.
 */
export function readList(body: unknown, list: ListField): readonly string[] | { readonly detail: string } {
  const addresses = list.items === "addresses";
  const what = addresses
    ? `must list ${list.min} to ${list.max} addresses, each one address (one string with a single @, no commas, semicolons or spaces, at most ${BOUNDS.address} characters)`
    : `must list ${list.min} to ${list.max} ${list.items} (non-empty strings of at most ${BOUNDS.listId} characters)`;
  const value = typeof body === "object" && body !== null ? ownValue(body, list.field) : undefined;
  if (value === null || typeof value !== "object" || isArray(value) !== true) return { detail: what };
  const entries = readStrings(value, list.max, addresses ? BOUNDS.address : BOUNDS.listId);
  if (typeof entries === "string") {
    return { detail: entries.startsWith("has more than") ? `${what}; it ${entries}` : what };
  }
  if (entries.length < list.min) return { detail: `${what}; got ${entries.length}` };
  for (const entry of entries) {
    if (entry === "" || (addresses && !ADDRESS.test(entry))) return { detail: what };
  }
  return entries;
}

/** The values of a query parameter, repeated or comma-separated, trimmed, empties dropped. */
export function queryValues(query: ReadonlyMap<string, readonly string[]>, name: string): string[] {
  const raw = query.get(name);
  if (raw === undefined) return [];
  const values: string[] = [];
  for (const entry of raw) {
    for (const part of entry.split(",")) {
      const value = part.trim();
      if (value !== "") values.push(value);
    }
  }
  return values;
}
