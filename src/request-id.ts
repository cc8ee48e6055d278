/**
 * Request ids (DESIGN §13, §14): `req_<id>`, from the host's id, the policy's generator, or, in the
 * pure API, derived from the inputs so that the same inputs always give the same id.
 */
import { describeThrown, PolicyConfigError } from "./errors.js";
import { FNV_BASIS, FNV_BASIS_2, FNV_PRIME, FNV_PRIME_2 } from "./hash.js";
import { grantsCode } from "./permissions.js";
import type { DescriptorRead } from "./request.js";
import type { Grants } from "./types.js";

/** Every byte as two lowercase hex digits. */
const HEX2 = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** `h` as 8 lowercase hex digits (as `toString(16).padStart(8, "0")`, without the number-to-text path). */
function hex8(h: number): string {
  return HEX2[h >>> 24]! + HEX2[(h >>> 16) & 255]! + HEX2[(h >>> 8) & 255]! + HEX2[h & 255]!;
}

/** 64 random bits drawn once per process (or worker), so that two processes never share an id. */
let prefix: string | undefined;
let issued = 0;
/** All but the last two digits of the ids of the current block of 256 (they change once per block). */
let head = "";
let headBlock = -1;

/** The next id: `<prefix><counter>`, 32 hex digits; `tag` goes before it. */
function nextId(tag: string): string {
  if (prefix === undefined) {
    // the Web Crypto global (Node 20+, Deno, Bun, workers): the main entry imports no node: module
    const bytes = globalThis.crypto.getRandomValues(new Uint32Array(2));
    prefix = hex8(bytes[0]!) + hex8(bytes[1]!);
  }
  issued++;
  const block = Math.floor(issued / 256);
  if (block !== headBlock) {
    headBlock = block;
    head = (prefix + hex8(Math.floor(issued / 2 ** 32)) + hex8(issued >>> 0)).slice(0, 30);
  }
  return tag + head + HEX2[issued & 255]!;
}

/**
 * The default request id: a random per-process prefix and a counter, 32 hex digits, unique within
 * the process and across processes. A fresh `randomUUID` per decision cost ~13 % of a check; the
 * digits that change only every 256 ids are written once per 256.
 */
export function randomId(): string {
  return nextId("");
}

/**
 * A policy's request ids (`Decision.requestId`): the host's (`req_` prefixed when it lacks it), else one from
 * `generateId`; with the default generator, `req_` and the id are built in one step.
 */
export function requestIds(generateId: () => string): (given: string | undefined) => string {
  if (generateId !== randomId) return (given) => hostRequestId(given) ?? generatedId(generateId);
  return (given) => hostRequestId(given) ?? nextId("req_");
}

/** What a host's `generateId` may return: what a request's own `requestId` may be (request.ts), as it goes into `request_id` and headers. */
const GENERATED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * `req_` and the id the host's `generateId` returns (as the host's request id: not prefixed twice).
 * Its mistakes throw {@link PolicyConfigError} naming `generateId`, as a clock's do: an id that
 * throws, is not a string, or holds what a header cannot (a CR LF reached `request_id`; found by a
 * black-box review).
 */
function generatedId(generateId: () => string): string {
  let id: unknown;
  try {
    id = generateId();
  } catch (error) {
    throw new PolicyConfigError("generateId()", `threw ${describeThrown(error)}`, { cause: error });
  }
  if (typeof id !== "string" || !GENERATED_ID.test(id) || id === "req_") {
    const shown = typeof id === "string" ? JSON.stringify(id.length > 60 ? `${id.slice(0, 60)}…` : id) : id === null ? "null" : typeof id;
    throw new PolicyConfigError("generateId()", `must return 1 to 128 characters of A-Z, a-z, 0-9, ".", "_", ":" and "-" (an id that goes into request_id and headers); returned ${shown}`);
  }
  return hostRequestId(id)!;
}

/**
 * The two FNV-1a hashes of a derived id, as text is fed to them (see {@link inputId}): held in a
 * typed array, where they stay 32-bit integers (a module variable holding one is a heap number, a
 * new one at every character), and fed a separator and a string at a time from locals: one call per
 * part of the text (a call per separator, and per part's kind, was ~0.1 µs of an id).
 */
const hash = new Int32Array(2);

/** Feeds the character `sep` (none when negative), then `text`'s characters from `from` up to `end`, to both hashes. */
function feed(sep: number, text: string, end: number, from = 0): void {
  let a = hash[0]!;
  let b = hash[1]!;
  if (sep >= 0) {
    a = Math.imul(a ^ sep, FNV_PRIME);
    b = Math.imul(b ^ sep, FNV_PRIME_2);
  }
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, FNV_PRIME);
    b = Math.imul(b ^ c, FNV_PRIME_2);
  }
  hash[0] = a;
  hash[1] = b;
}

/** Feeds the unit `sep`, then the unit `code` (a character's code, or a marker or number no character can be; no string made). */
function feedCode(sep: number, code: number): void {
  hash[0] = Math.imul(Math.imul(hash[0]! ^ sep, FNV_PRIME) ^ code, FNV_PRIME);
  hash[1] = Math.imul(Math.imul(hash[1]! ^ sep, FNV_PRIME_2) ^ code, FNV_PRIME_2);
}

/** What a whole number is fed as, first: a unit no character's code can be (a character is below 2^16). */
export const WHOLE_NUMBER = 0x10000;

/**
 * Feeds `sep`, then `n`: a whole number in 0 … 2^53 − 1 (`now` and `seq`) as three units,
 * {@link WHOLE_NUMBER}, its low 32 bits and the rest (two FNV steps where its decimal text was
 * thirteen for a time, each a division: ~5 % of an `evaluate`); any other number as the text
 * `String(n)` writes.
 */
function feedNumber(sep: number, n: number): void {
  if (!(Number.isSafeInteger(n) && n >= 0)) {
    const text = String(n);
    return feed(sep, text, text.length);
  }
  const high = Math.floor(n / 4294967296);
  feedCode(sep, WHOLE_NUMBER);
  feedCode((n - high * 4294967296) | 0, high); // two units: the low 32 bits, then the rest
}

/**
 * Feeds `sep`, then a descriptor field as the id reads it: a string of at most 1 024 characters
 * whole; a longer one as its first 512 characters, {@link LONG_TEXT} and its length, and its last
 * 512; any other value's type.
 */
function feedField(sep: number, value: unknown): void {
  if (typeof value !== "string") {
    const type = typeof value;
    return feed(sep, type, type.length);
  }
  const n = value.length;
  if (n <= 2 * FIELD_END) return feed(sep, value, n);
  // a long field: its first and last FIELD_END characters and its length between them (bounded work
  // whatever its size; a path's query string mostly differs at its end: found by a review, two
  // requests 200 and 403 shared an id when they differed past the 512th character)
  feed(sep, value, FIELD_END);
  feedCode(LONG_TEXT, n);
  feed(-1, value, n, n - FIELD_END);
}

/** How much of a long field's start and of its end an id reads. */
const FIELD_END = 512;
/** What marks a long field's length in an id's units: a unit no character's code can be (see {@link WHOLE_NUMBER}). */
export const LONG_TEXT = 0x10001;

/** Feeds ` name=` and the values of one query parameter, joined by commas, to 512 characters at most. */
function feedParam(name: string, values: readonly string[]): void {
  feed(32, name, name.length); // " "
  if (values.length === 0) return feed(61, "", 0); // "="
  let left = 512;
  for (let k = 0; k < values.length && left > 0; k++) {
    // "=" before the first value, "," before each next one (a comma counts toward the 512)
    if (k > 0 && --left === 0) return feed(44, "", 0);
    const value = String(values[k]);
    const n = Math.min(value.length, left);
    feed(k === 0 ? 61 : 44, value, n);
    left -= n;
  }
}

/** Hex digit character codes, for an id written in one step. */
const HEX_CODES = Array.from("0123456789abcdef", (c) => c.charCodeAt(0));

/** `h`'s 4 bits at `shift`, as the code of a lowercase hex digit. */
function hexAt(h: number, shift: number): number {
  return HEX_CODES[(h >>> shift) & 15]!;
}

/** Both hashes as 16 hex digits, written in one step (a flat string, where joined pieces make a chain). */
function hashHex(): string {
  const a = hash[0]!;
  const b = hash[1]!;
  return String.fromCharCode(
    hexAt(a, 28), hexAt(a, 24), hexAt(a, 20), hexAt(a, 16), hexAt(a, 12), hexAt(a, 8), hexAt(a, 4), hexAt(a, 0),
    hexAt(b, 28), hexAt(b, 24), hexAt(b, 20), hexAt(b, 16), hexAt(b, 12), hexAt(b, 8), hexAt(b, 4), hexAt(b, 0),
  );
}

/**
 * The descriptor's part of a derived id's text, fed last (see {@link inputId}): its fields, and both
 * hashes after them. Most pure decisions repeat the request before them (the same route for many
 * credentials, a host deciding one request after another), so that part is fed once while the fields
 * are the same: the same strings (compared by their text), the same other values (by identity: a
 * value that is not a string is fed as its type), and the same query as read (by identity: read
 * afresh from each descriptor that has one, never changed after).
 */
const fed = { method: undefined as unknown, path: undefined as unknown, key: undefined as unknown, newsletter: undefined as unknown, query: undefined as unknown, valid: false };
const afterDescriptor = new Int32Array(2);

/** Feeds `METHOD PATH IDEMPOTENCY-KEY NEWSLETTER` and the query's ` name=v1,v2` from the start of both hashes. */
function feedDescriptor(read: DescriptorRead): void {
  const { method, path, idempotencyKey, newsletter, query } = read;
  if (fed.valid && method === fed.method && path === fed.path && idempotencyKey === fed.key && newsletter === fed.newsletter && query === fed.query) {
    hash[0] = afterDescriptor[0]!;
    hash[1] = afterDescriptor[1]!;
    return;
  }
  hash[0] = FNV_BASIS;
  hash[1] = FNV_BASIS_2;
  feedField(-1, method);
  feedField(32, path);
  feedField(32, idempotencyKey);
  feedField(32, newsletter);
  if (query instanceof Map) for (const [name, values] of query as ReadonlyMap<string, readonly string[]>) feedParam(name, values);
  afterDescriptor[0] = hash[0]!;
  afterDescriptor[1] = hash[1]!;
  fed.method = method;
  fed.path = path;
  fed.key = idempotencyKey;
  fed.newsletter = newsletter;
  fed.query = query;
  fed.valid = true;
}

/**
 * A short stable id derived from the inputs of a pure decision (DESIGN §14): 64 bits, the FNV-1a
 * hash of the text below with two bases and primes, written as 16 hex digits. The text, parts joined
 * by NUL: `METHOD PATH IDEMPOTENCY-KEY NEWSLETTER` (each field a string's first 512 characters or
 * the value's type) followed by ` name=v1,v2` per query parameter (values to 512 characters); the
 * subject; `ROLE W` (the owner's role on the newsletter as the plan read it, like a field, and the
 * one character whose code is {@link whoCode} of the credential's grants there and its account
 * access); `now`; `seq` (a whole number as three units rather than its text: {@link feedNumber}).
 * The descriptor is read as `plan` read it (once, plain values only), each
 * part bounded, so it never throws and costs the same for a 10 MB string as for a short one. The
 * text is fed to the hashes piece by piece, never built; the descriptor's part first, so that a
 * descriptor like the one before is not fed again ({@link feedDescriptor}).
 */
export function inputId(subject: string, read: DescriptorRead, role: string | undefined, who: number, now: number, seq: number): string {
  feedDescriptor(read);
  feed(0, subject, subject.length);
  feedField(0, role);
  feedCode(32, who); // one code unit: who < 2 · 3^6
  feedNumber(0, now);
  feedNumber(0, seq);
  return hashHex();
}

/**
 * The host's request id as a decision carries it (DESIGN §13: `req_<id>`, prefixed when it lacks
 * `req_`), or undefined when it gave none (or an empty one): then an id is made. The one rule
 * of a host's id, for every way an id is made below.
 */
function hostRequestId(given: string | undefined): string | undefined {
  if (given === undefined || given === "req_") return undefined;
  return given.startsWith("req_") ? given : `req_${given}`;
}

/**
 * The request id of a pure decision: the host's, else `req_` and the id {@link inputId} derives
 * from the inputs (no closure made per decision to defer it).
 */
export function derivedRequestId(given: string | undefined, subject: string, read: DescriptorRead, role: string | undefined, who: number, now: number, seq: number): string {
  return hostRequestId(given) ?? `req_${inputId(subject, read, role, who, now, seq)}`;
}

/**
 * What a derived id reads of the credential beyond its subject: its raw grant on the newsletter in
 * each family (a base-3 digit each, in the spec's order: none 0, read 1, write 2) times 2, plus 1
 * for account access. Two requests alike in all else but answered differently for the credential's
 * grants (200 and 403) or its account access get two ids. A whole number below 2 · 3^6.
 */
export function whoCode(grants: Grants | undefined, account: boolean): number {
  return grantsCode(grants) * 2 + (account ? 1 : 0);
}

