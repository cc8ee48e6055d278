/**
 * Reading the untrusted request descriptor. Nothing here throws: a descriptor of any shape becomes
 * either a normalised request or the field that made it malformed.
 */
import type { PolicyRequest } from "./types.js";

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

const MAX_PATH = 4096;
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

function readQueryObject(query: unknown): Map<string, string[]> | string {
  if (typeof query !== "object" || query === null || Array.isArray(query)) return "query";
  const out = new Map<string, string[]>();
  for (const name of Object.keys(query)) {
    const value: unknown = (query as Record<string, unknown>)[name];
    if (typeof value === "string") add(out, name, value);
    else if (Array.isArray(value) && value.every((v) => typeof v === "string")) for (const v of value as string[]) add(out, name, v);
    else return name;
  }
  return out;
}

/** Reads a descriptor of any shape. */
export function normaliseRequest(input: unknown): NormalRequest | Malformed {
  const request = (typeof input === "object" && input !== null ? input : {}) as Partial<Record<keyof PolicyRequest, unknown>>;
  const rawMethod = request.method;
  const rawPath = request.path;
  const shownPath = typeof rawPath === "string" ? rawPath.slice(0, 200) : "?";
  if (typeof rawMethod !== "string" || !/^[A-Za-z]{1,16}$/.test(rawMethod)) {
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
    const read = readQueryObject(request.query);
    if (typeof read === "string") return { param: read, detail: "must be a string or a list of strings", method, path: shownPath };
    query = read;
  } else if (mark >= 0) {
    const read = readQueryString(withQuery.slice(mark + 1));
    if (read === null) return { param: "query", detail: "has invalid percent-encoding", method, path: shownPath };
    query = read;
  }

  const requestId = typeof request.requestId === "string" && REQUEST_ID.test(request.requestId) ? request.requestId : undefined;
  return {
    method,
    segments,
    path: "/" + segments.join("/"),
    query,
    idempotencyKey: request.idempotencyKey,
    body: request.body,
    newsletter: typeof request.newsletter === "string" && request.newsletter !== "" ? request.newsletter : undefined,
    requestId,
  };
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
