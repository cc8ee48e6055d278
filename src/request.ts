/**
 * Reading the untrusted request descriptor. Nothing here throws: a descriptor of any shape becomes
 * either a normalised request or the field that made it malformed.
 *
 * The descriptor is read once, defensively: each field through its own property descriptor (own
 * data properties only, so no getter and no prototype runs), inside try/catch (a Proxy's traps may
 * throw), into plain values, with every size bounded before any work that grows with it. Whatever
 * cannot be read is a 400 `invalid_request` naming the field. See docs/security.md for the bounds.
 */
import { BOUNDS } from "./bounds.js";
import { countParts, readQueryObject, readQueryString } from "./query.js";
import { decode, ownValue, UNREADABLE } from "./safe-read.js";


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

const MAX_PATH = BOUNDS.path;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f\\]/;
const EMPTY_QUERY: ReadonlyMap<string, readonly string[]> = new Map();

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

