/**
 * What an Idempotency-Key is bound to: the method, the decoded path, the query and the JSON body.
 * A retry with the same key must be the same request; anything else is a `conflict` (409), so a
 * replayed key cannot carry another body past the daily caps.
 *
 * The fingerprint reads `METHOD /path <hash>`: the method and path stay readable (for messages and
 * for operators looking at a store), and `<hash>` is 128 bits of SHA-256 over a canonical text of the
 * query and body. SHA-256 rather than a fast non-cryptographic hash (FNV, cyrb53) because the client
 * chooses the body: with a non-cryptographic hash it can search for two bodies with one hash offline
 * and send both under one key; with SHA-256 (even cut to 128 bits) no such pair can be found.
 */
import { BOUNDS } from "./bounds.js";
import { sha256Hex } from "./sha256.js";
import { utf8Safe } from "./store-keys.js";

/** Hex digits of the hash in a fingerprint: 128 bits. */
const HASH_HEX = 32;
const HASH_SUFFIX = new RegExp(` [0-9a-f]{${HASH_HEX}}$`);

/** An array or object being written: its values read when it was opened, and how far it is written. */
interface Open {
  readonly container: object;
  /** Sorted keys of an object; undefined for an array. */
  readonly keys: readonly string[] | undefined;
  readonly values: readonly unknown[];
  next: number;
}

/** How much of a body {@link canonicalJson} writes at most before it gives up. */
export interface CanonicalBounds {
  /** Values (every array, object and primitive) at most. */
  readonly values: number;
  /** Characters of text at most. */
  readonly length: number;
}

const UNBOUNDED: CanonicalBounds = { values: Infinity, length: Infinity };

/**
 * A canonical text of a JSON-like value: object keys sorted, strings and keys as `JSON.stringify`
 * writes them (so lone surrogates are escaped and the text is well-formed). Two values give the same
 * text exactly when they are the same JSON (whatever their key order). Never throws and never
 * recurses: values the JSON parser cannot produce get a tag of their own (`undefined`, functions,
 * bigints), a cycle reads as `!cycle`, and a getter or proxy that throws as `!unreadable` (an array's
 * elements and an object's values are read when it is opened, in order).
 *
 * One frame per array or object, not per value (a frame per value made a 500 000-element body cost
 * ~280 ms); the text is the same as before, so that a key recorded before an upgrade still matches.
 *
 * @param bounds - values and characters at most: past either, undefined (the work stops there).
 */
export function canonicalJson(value: unknown, bounds: CanonicalBounds = UNBOUNDED): string | undefined {
  const out: string[] = [];
  const open = new Set<object>();
  const stack: Open[] = [];
  let length = 0;
  let count = 0;
  let v = value;
  for (;;) {
    // write v: a primitive's text, or the opening of an array or object
    if (++count > bounds.values) return undefined;
    let text: string;
    if (v === null) text = "null";
    else if (typeof v === "string") {
      // its JSON text is at least its length and two quotes: a string past the bound is not copied to learn so
      if (length + v.length + 2 > bounds.length) return undefined;
      text = JSON.stringify(v);
    }
    else if (typeof v === "number") text = Number.isFinite(v) ? String(v) : `!${String(v)}`; // String is JSON.stringify for a finite number
    else if (typeof v === "boolean") text = v ? "true" : "false";
    else if (typeof v === "bigint") text = `!${v}n`;
    else if (typeof v !== "object") text = `!${typeof v}`;
    else if (open.has(v)) text = "!cycle";
    else {
      const opening = opened(v, out, open, stack, bounds.values - count);
      if (opening === undefined) return undefined;
      text = opening;
    }
    out.push(text);
    length += text.length;
    if (length > bounds.length) return undefined;
    // the next value to write, closing what is done
    let top = stack[stack.length - 1];
    while (top !== undefined && top.next === top.values.length) {
      out.push(top.keys === undefined ? "]" : "}");
      open.delete(top.container);
      stack.pop();
      top = stack[stack.length - 1];
    }
    if (top === undefined) return out.join("");
    const i = top.next++;
    const separator = top.keys === undefined ? (i > 0 ? "," : "") : `${i > 0 ? "," : ""}${JSON.stringify(top.keys[i])}:`;
    if (separator !== "") {
      out.push(separator);
      length += separator.length;
    }
    v = top.values[i];
  }
}

/**
 * Opens an array or object: reads its values (an object's by its sorted keys) and pushes its frame.
 * Returns the text that opens it, or `!unreadable` after what it wrote when a read throws (a getter,
 * or a Proxy's trap: the text then stays as the reading left it), or undefined when it holds more
 * values than `room` (the bound is passed before they are read).
 */
function opened(v: object, out: string[], open: Set<object>, stack: Open[], room: number): string | undefined {
  try {
    if (Array.isArray(v)) {
      // Array.isArray throws for a revoked Proxy: nothing is written before it
      out.push("[");
      // more elements than values left: past the bound before any is read
      if (v.length > room) return undefined;
      const values: unknown[] = [];
      for (let i = 0; i < v.length; i++) values.push(v[i]);
      stack.push({ container: v, keys: undefined, values, next: 0 });
    } else {
      out.push("{");
      const names = Object.keys(v);
      if (names.length > room) return undefined; // before the sort, which grows faster than the listing
      const keys = names.sort();
      const values: unknown[] = [];
      for (const key of keys) values.push((v as Record<string, unknown>)[key]);
      stack.push({ container: v, keys, values, next: 0 });
    }
    open.add(v);
    return "";
  } catch {
    return "!unreadable";
  }
}

/**
 * The fingerprint of a write that carries an Idempotency-Key.
 *
 * @param method - the upper-case method.
 * @param path - the decoded, normalised path, without its query.
 * @param query - the query as read (names in any order; each name's values in order).
 * @param body - the parsed JSON body.
 * @param newsletter - the newsletter the request is on when the path does not name it (the
 *   descriptor's `newsletter`); undefined when the path names it, or there is none.
 * @returns `METHOD /path <32 hex digits>`; no control characters (the Redis store relies on it).
 *   Undefined when the body is past the bounds a fingerprint reads (BOUNDS.keyedBodyValues and
 *   keyedBodyLength: docs/security.md): the plan refuses it, having done no more work than that.
 */
export function requestFingerprint(method: string, path: string, query: ReadonlyMap<string, readonly string[]>, body: unknown, newsletter?: string): string | undefined {
  const names = [...query.keys()].sort();
  const queryText = JSON.stringify(names.map((name) => [name, query.get(name)]));
  // the query is bounded by the descriptor's reading; the body only here, before the work that grows with it
  const bodyText = canonicalJson(body, KEYED_BODY);
  if (bodyText === undefined) return undefined;
  // a newsletter the path does not name (the descriptor's, as the host resolved it) is part of the
  // request: one key sent to two newsletters is two requests (DESIGN §7: a conflict), never a replay
  // on the other newsletter's cap (found by a review of RedisStore on a cluster: the two-step send
  // then counted a key twice, or answered a full cap with a replay)
  const text = newsletter === undefined ? `${queryText}\n${bodyText}` : `${queryText}\n${bodyText}\n${JSON.stringify(newsletter)}`;
  const hash = sha256Hex(text).slice(0, HASH_HEX);
  // the path as Redis can carry it (utf8Safe): two paths that differ in a lone surrogate stay two
  return `${method} ${utf8Safe(path)} ${hash}`;
}

const KEYED_BODY: CanonicalBounds = { values: BOUNDS.keyedBodyValues, length: BOUNDS.keyedBodyLength };

/** The `METHOD /path` part of a fingerprint, for messages. */
export function describeFingerprint(fingerprint: string): string {
  return fingerprint.replace(HASH_SUFFIX, "");
}
