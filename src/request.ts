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
import { countParts, readQueryObject, readQueryString, type FieldProblem } from "./query.js";
import { decode, isArray, ownValue, presentValue, UNREADABLE } from "./safe-read.js";


/** A descriptor after normalisation. */
export interface NormalRequest {
  /** Upper case; HEAD is read as GET. */
  readonly method: string;
  /** Decoded path segments, none empty, none `.` or `..`. */
  readonly segments: readonly string[];
  /** The decoded path without its query or a trailing slash, for messages and idempotency fingerprints. */
  readonly path: string;
  /**
   * The judged query, which an Idempotency-Key is also bound to: the `query` object when one was
   * given (as handlers get it), else the path's query string; with an adapter's descriptor, which
   * asks for both ({@link BOTH_QUERIES}), the object and what the string adds to it (the object
   * itself when the string adds nothing). A key bound to the object alone ignored the string a
   * handler reads with the framework's query parser off (its object empty): another query under the
   * key was a replay, not a 409 (found by a security drill).
   */
  readonly query: ReadonlyMap<string, readonly string[]>;
  readonly idempotencyKey: unknown;
  readonly body: unknown;
  readonly newsletter: string | undefined;
  readonly requestId: string | undefined;
  /**
   * The first field other than the method, the path and the newsletter that could not be read or
   * has the wrong type (a query value that is not text, a name qs reads as an object, a getter).
   * The request routes by its method and path all the same, so its refusal (400 naming the field)
   * comes at the input check, charged to the operation's budgets (DESIGN §1, §2): a spent budget, no
   * reach or a missing permission is answered first. Its query then reads as empty: a Map of its
   * own, never a recent path's read, which a kept plan is matched by.
   */
  readonly problem: FieldProblem | undefined;
  /**
   * What is wrong with the descriptor's `newsletter` (not a string, too long, unreadable): refused
   * 400 at the reach check where the reach is judged by it (a path naming no newsletter), else at
   * the input check. `newsletter` is then undefined.
   */
  readonly newsletterProblem: FieldProblem | undefined;
}


/** Why a descriptor could not be read. */
export interface Malformed extends FieldProblem {
  /** What could be read of it, for messages. */
  readonly method: string;
  readonly path: string;
  /** The host's request id when it could be read and is one (a refusal of the descriptor still carries it). */
  readonly requestId: string | undefined;
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
  readonly query: ReadonlyMap<string, readonly string[]> | FieldProblem | undefined;
  readonly idempotencyKey: unknown;
  readonly body: unknown;
  readonly newsletter: unknown;
  readonly requestId: unknown;
  /** The first field that could not be read (a getter, or a Proxy trap that threw). */
  readonly unreadable: string | undefined;
  /** The descriptor asked for its `query` object and its path's query string both to be judged ({@link BOTH_QUERIES}). */
  readonly bothQueries: boolean;
}

/**
 * Set (to true) by the adapters on the descriptors they build: the `query` object and the path's
 * query string are both judged, since a handler may read either (the framework's parsed object, or
 * the raw URL when the host's parser is off or custom), and each name's values are taken from
 * either. A descriptor a host builds gets DESIGN's `query`: when given, used instead of the path's
 * query. A registered symbol, so that an adapter and a policy loaded from the package's two builds
 * agree; a host that sets it only has more judged.
 */
export const BOTH_QUERIES: unique symbol = Symbol.for("newsletter-policy.bothQueries");

/** A descriptor as read: the private brand tells it apart from a host's object (a Proxy cannot fake it). */
class Read implements DescriptorRead {
  readonly #brand = true;
  method: unknown = undefined;
  path: unknown = undefined;
  query: DescriptorRead["query"] = undefined;
  idempotencyKey: unknown = undefined;
  body: unknown = undefined;
  newsletter: unknown = undefined;
  requestId: unknown = undefined;
  unreadable: string | undefined = undefined;
  bothQueries = false;

  static is(value: object): value is Read {
    return #brand in value; // no Proxy trap runs for a private brand check
  }
}

/** One field of the descriptor into `out`; the first unreadable one is named. */
function readField(out: Read, object: object, field: keyof typeof SHOWN, usual = false): unknown {
  const value = usual ? presentValue(object, field) : ownValue(object, field);
  if (value !== UNREADABLE) return value;
  out.unreadable ??= SHOWN[field];
  return undefined;
}

const SHOWN = {
  method: "method",
  path: "path",
  query: "query",
  idempotencyKey: "Idempotency-Key",
  body: "body",
  newsletter: "newsletter",
  requestId: "requestId",
} as const;

/**
 * Reads a descriptor of any shape once: own data properties only, no getter run, every trap inside
 * try/catch. Never throws. What it returns is recognised when read again, and costs nothing then.
 */
export function readDescriptor(input: unknown): DescriptorRead {
  if (typeof input === "object" && input !== null && Read.is(input)) return input;
  const out = new Read();
  const object = typeof input === "object" && input !== null ? input : typeof input === "function" ? input : undefined;
  if (object === undefined) return out;
  out.method = readField(out, object, "method", true);
  out.path = readField(out, object, "path", true);
  const query = readField(out, object, "query");
  out.idempotencyKey = readField(out, object, "idempotencyKey");
  out.body = readField(out, object, "body");
  out.newsletter = readField(out, object, "newsletter");
  out.requestId = readField(out, object, "requestId");
  if (query !== undefined) {
    out.bothQueries = ownValue(object, BOTH_QUERIES) === true;
    out.query =
      typeof query !== "object" || query === null
        ? { param: "query", detail: "must be an object of name → string or list of strings" }
        : readQueryObject(query);
  }
  return out;
}

/** What a path string reads as (segments, the path shown, its query string), or why it cannot be read. */
type PathRead =
  | { readonly segments: readonly string[]; readonly path: string; readonly query: ReadonlyMap<string, readonly string[]> | FieldProblem }
  | { readonly param: "path"; readonly detail: string };

/**
 * Recent path strings, read: a busy API sees few distinct paths, so each is parsed once. Keyed on the
 * exact string, holding exactly what reading it gives (a refusal too), so a hit answers as a miss
 * would; only short paths are kept and the whole is cleared when full, so hostile paths cannot grow it.
 */
const recentPaths = new Map<string, PathRead>();
const RECENT_PATHS_MAX = 1024;
const RECENT_PATH_LENGTH = 256;

function parsePath(rawPath: string): PathRead {
  // A request target never carries a fragment (RFC 9112 §3.2), but a raw client can send a "#", and
  // Node keeps it in req.url: a handler's parser reads the query past it (`?status=sent#&status=draft`
  // is status sent# and draft to Fastify's), so a policy that cut the text there judged less than the
  // handler acts on. Refused, whatever follows it (found by a black-box review).
  if (rawPath.includes("#")) return { param: "path", detail: 'has a "#": a request path never carries a fragment' };
  const withQuery = rawPath;
  const mark = withQuery.indexOf("?");
  const segments = readSegments(mark < 0 ? withQuery : withQuery.slice(0, mark));
  if (typeof segments === "string") return { param: "path", detail: segments };
  Object.freeze(segments);
  const path = "/" + segments.join("/");
  if (mark < 0) return { segments, path, query: EMPTY_QUERY };
  const text = withQuery.slice(mark + 1);
  if (countParts(text) > BOUNDS.queryParams) return { segments, path, query: { param: "query", detail: `must have at most ${BOUNDS.queryParams} parameters` } };
  return { segments, path, query: readQueryString(text) };
}

/**
 * A request path's segments as the policy judges them: split at "/", each percent-decoded once,
 * without the query string; undefined when the policy refuses the path (400). The adapters hand
 * them to a `newsletter` resolver: an id looked up as the client spelt it (`x%41`) is not the id the
 * policy judges and the handler's route parameter holds (`xA`), and a resolver that split the raw
 * URL charged the send of nl_1's article to nl_2's grant and cap (found by an adapter review).
 */
export function judgedSegments(rawPath: string): readonly string[] | undefined {
  if (!isPathText(rawPath)) return undefined;
  const read = readPath(rawPath);
  return "segments" in read ? read.segments : undefined;
}

/** A string the policy reads as a path at all: starting with "/", within the bound. */
function isPathText(rawPath: unknown): rawPath is string {
  return typeof rawPath === "string" && rawPath.startsWith("/") && rawPath.length <= MAX_PATH;
}

function readPath(rawPath: string): PathRead {
  if (rawPath.length > RECENT_PATH_LENGTH) return parsePath(rawPath);
  let read = recentPaths.get(rawPath);
  if (read === undefined) {
    read = parsePath(rawPath);
    if (recentPaths.size >= RECENT_PATHS_MAX) recentPaths.clear();
    recentPaths.set(rawPath, read);
  }
  return read;
}

/**
 * A `query` object's parameters with the path's query string's: each name's values from either, a
 * value as many times as the one that has it more often (a query read twice, as the object and as
 * the string, is the same query: `limit=10` once is one limit, `limit=10&limit=10` still two). The
 * object itself when the string adds nothing to it (no copy).
 */
function bothQueries(object: ReadonlyMap<string, readonly string[]>, text: ReadonlyMap<string, readonly string[]>): ReadonlyMap<string, readonly string[]> {
  if (text.size === 0) return object;
  const out = new Map<string, string[]>();
  let added = false;
  for (const [name, values] of object) out.set(name, [...values]);
  for (const [name, values] of text) {
    const list = out.get(name);
    if (list === undefined) {
      out.set(name, [...values]);
      added = true;
      continue;
    }
    // each value of the string's beyond the times the object has it
    const left = [...list];
    for (const v of values) {
      const at = left.indexOf(v);
      if (at >= 0) left.splice(at, 1);
      else {
        list.push(v);
        added = true;
      }
    }
  }
  return added ? out : object;
}

/** The common methods as they normalise; any other is checked and upper-cased. */
const METHODS = new Map(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"].map((m) => [m, m === "HEAD" ? "GET" : m]));

function methodOf(raw: unknown): string | undefined {
  if (raw === "GET" || raw === "POST") return raw; // the two most common, without a Map lookup
  if (typeof raw !== "string") return undefined;
  const known = METHODS.get(raw);
  if (known !== undefined) return known;
  if (raw.length > BOUNDS.method || !/^[A-Za-z]{1,16}$/.test(raw)) return undefined;
  const upper = raw.toUpperCase();
  return upper === "HEAD" ? "GET" : upper;
}

/** The path as a refusal shows it (a function, not a closure made per request). */
function shown(rawPath: unknown): string {
  return typeof rawPath === "string" ? rawPath.slice(0, 200) : "?";
}

const UNREADABLE_DETAIL = "could not be read: pass a plain value (a getter or a Proxy that throws is not read)";

/**
 * Reads a descriptor of any shape: a request that cannot be routed (its method or path cannot be
 * read) is {@link Malformed}; any other field that cannot be judged is the request's
 * {@link NormalRequest.problem}.
 */
export function normaliseRequest(input: unknown): NormalRequest | Malformed {
  const request = readDescriptor(input);
  const rawPath = request.path;
  // the host's id is kept on a refusal of the descriptor too: the host matches it to its logs (DESIGN §14)
  const requestId = typeof request.requestId === "string" && REQUEST_ID.test(request.requestId) ? request.requestId : undefined;
  // the fields are read in order and the first unreadable one named: the method or the path, and the request cannot be routed
  const unreadable = request.unreadable;
  if (unreadable === "method" || unreadable === "path") return { param: unreadable, detail: UNREADABLE_DETAIL, method: "?", path: shown(rawPath), requestId };
  const method = methodOf(request.method);
  if (method === undefined) return { param: "method", detail: "must be an HTTP method", method: "?", path: shown(rawPath), requestId };
  if (!isPathText(rawPath)) {
    return { param: "path", detail: `must be a string starting with "/" of at most ${MAX_PATH} characters`, method, path: shown(rawPath), requestId };
  }
  const read = readPath(rawPath);
  if (!("segments" in read)) return { param: read.param, detail: read.detail, method, path: shown(rawPath), requestId };
  // DESIGN: a `query` object, when given, is used instead of the path's query string; an adapter's
  // descriptor asks for both to be judged (BOTH_QUERIES): a handler may read either
  const fromObject = request.query;
  const fromPath = fromObject === undefined || request.bothQueries ? read.query : undefined;
  // the first field that cannot be judged, in the order the descriptor is read: the first unreadable
  // one, else the query, else the newsletter (DESIGN §10: a wrong type is bad input, named)
  const problem: FieldProblem | undefined =
    unreadable !== undefined && unreadable !== "newsletter"
      ? { param: unreadable, detail: UNREADABLE_DETAIL }
      : fromObject !== undefined && !(fromObject instanceof Map)
        ? (fromObject as FieldProblem)
        : fromPath !== undefined && !(fromPath instanceof Map)
          ? (fromPath as FieldProblem)
          : undefined;
  type Query = ReadonlyMap<string, readonly string[]>;
  const query =
    problem !== undefined
      ? new Map()
      : fromObject === undefined
        ? (fromPath as Query)
        : fromPath === undefined
          ? (fromObject as Query)
          : bothQueries(fromObject as Query, fromPath as Query);

  const rawNewsletter = request.newsletter;
  return {
    method,
    segments: read.segments,
    path: read.path,
    query,
    idempotencyKey: request.idempotencyKey,
    body: request.body,
    newsletter: typeof rawNewsletter === "string" && rawNewsletter !== "" && rawNewsletter.length <= BOUNDS.newsletter ? rawNewsletter : undefined,
    requestId,
    problem,
    newsletterProblem: unreadable === "newsletter" ? { param: "newsletter", detail: UNREADABLE_DETAIL } : newsletterProblem(rawNewsletter),
  };
}

/** What is wrong with the descriptor's `newsletter`, if anything: null is a lookup that found none (absent, as undefined). */
function newsletterProblem(raw: unknown): FieldProblem | undefined {
  if (raw === undefined || raw === null) return undefined;
  // isArray, not Array.isArray: a revoked Proxy throws there (found by a clock and shapes drill: evaluate threw)
  if (typeof raw !== "string") return { param: "newsletter", detail: `must be a newsletter id (a string); got ${isArray(raw) === true ? "an array" : typeof raw}` };
  return raw.length > BOUNDS.newsletter ? { param: "newsletter", detail: `must be at most ${BOUNDS.newsletter} characters` } : undefined;
}
