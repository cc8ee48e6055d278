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
import { sha256Hex } from "./sha256.js";

/** Hex digits of the hash in a fingerprint: 128 bits. */
const HASH_HEX = 32;
const HASH_SUFFIX = new RegExp(` [0-9a-f]{${HASH_HEX}}$`);

type Frame = { value: unknown } | { close: string; parent?: object };

/**
 * A canonical text of a JSON-like value: object keys sorted, strings and keys as `JSON.stringify`
 * writes them (so lone surrogates are escaped and the text is well-formed). Two values give the same
 * text exactly when they are the same JSON (whatever their key order). Never throws and never
 * recurses: values the JSON parser cannot produce get a tag of their own (`undefined`, functions,
 * bigints), a cycle reads as `!cycle`, and a getter or proxy that throws as `!unreadable`.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const open = new Set<object>();
  const stack: Frame[] = [{ value }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if ("close" in frame) {
      out.push(frame.close);
      if (frame.parent !== undefined) open.delete(frame.parent);
      continue;
    }
    const v = frame.value;
    if (v === null) out.push("null");
    else if (typeof v === "string") out.push(JSON.stringify(v));
    else if (typeof v === "number") out.push(Number.isFinite(v) ? JSON.stringify(v) : `!${String(v)}`);
    else if (typeof v === "boolean") out.push(v ? "true" : "false");
    else if (typeof v === "bigint") out.push(`!${v}n`);
    else if (typeof v !== "object") out.push(`!${typeof v}`);
    else if (open.has(v)) out.push("!cycle");
    else {
      try {
        const items: Frame[] = [];
        if (Array.isArray(v)) {
          out.push("[");
          for (let i = 0; i < v.length; i++) {
            if (i > 0) items.push({ close: "," });
            items.push({ value: v[i] });
          }
          stack.push({ close: "]", parent: v });
        } else {
          out.push("{");
          const keys = Object.keys(v).sort();
          keys.forEach((key, i) => {
            items.push({ close: `${i > 0 ? "," : ""}${JSON.stringify(key)}:` });
            items.push({ value: (v as Record<string, unknown>)[key] });
          });
          stack.push({ close: "}", parent: v });
        }
        open.add(v);
        for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
      } catch {
        out.push("!unreadable");
      }
    }
  }
  return out.join("");
}

/**
 * The fingerprint of a write that carries an Idempotency-Key.
 *
 * @param method - the upper-case method.
 * @param path - the decoded, normalised path, without its query.
 * @param query - the query as read (names in any order; each name's values in order).
 * @param body - the parsed JSON body.
 * @returns `METHOD /path <32 hex digits>`; no control characters (the Redis store relies on it).
 */
export function requestFingerprint(method: string, path: string, query: ReadonlyMap<string, readonly string[]>, body: unknown): string {
  const names = [...query.keys()].sort();
  const queryText = JSON.stringify(names.map((name) => [name, query.get(name)]));
  const hash = sha256Hex(`${queryText}\n${canonicalJson(body)}`).slice(0, HASH_HEX);
  return `${method} ${path} ${hash}`;
}

/** The `METHOD /path` part of a fingerprint, for messages. */
export function describeFingerprint(fingerprint: string): string {
  return fingerprint.replace(HASH_SUFFIX, "");
}
