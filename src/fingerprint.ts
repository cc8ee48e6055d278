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
import { inheritsNothing, presentValue, UNREADABLE } from "./safe-read.js";
import { sha256BytesHex, sha256Hex } from "./sha256.js";
import { utf8Safe } from "./store-keys.js";

/** Hex digits of the hash in a fingerprint: 128 bits. */
const HASH_HEX = 32;
const HASH_SUFFIX = new RegExp(` [0-9a-f]{${HASH_HEX}}$`);

/** An array or object being written: what is read of it, and how far it is written. */
interface Open {
  readonly container: object;
  /** Sorted keys of an object; undefined for an array. */
  readonly keys: readonly string[] | undefined;
  /** Its values (an array's elements, an object's keys) in all. */
  readonly size: number;
  next: number;
}

/** What one walk learnt once, so that a body of many dates or objects of one kind pays for it once. */
interface Walk {
  /**
   * Prototypes of dates found to lead to a realm's own `Date.prototype` through classes that add
   * nothing: the chain walked, and another realm's `Date.prototype` listed, once (for each date, a
   * chain of 20 000 classes cost 675 ms for 200 dates, and listing another realm's ~7 µs a date;
   * found by reviews).
   */
  datePrototypes: Set<object> | undefined;
  /** Other realms' `Object.prototype`s met (each told once: telling one for each object cost 2–3×; found by a review). */
  objectPrototypes: Set<object> | undefined;
  /** A plain object's root for {@link isPlainObject}: `Object.prototype` of any realm, made once a walk. */
  readonly isRoot: (proto: object) => boolean;
}

/** A walk's state, its root test over its own set. */
function newWalk(): Walk {
  const walk: Walk = { datePrototypes: undefined, objectPrototypes: undefined, isRoot: (proto) => isObjectPrototype(proto, walk) };
  return walk;
}

/** How much of a body {@link canonicalJson} writes at most before it gives up. */
export interface CanonicalBounds {
  /** Values (every array, object and primitive) at most. */
  readonly values: number;
  /** Characters of text at most. */
  readonly length: number;
  /** Arrays and objects open inside one another at most (a cycle is past any such bound). */
  readonly depth: number;
}

/**
 * Why a body has no canonical text: past the bounds, not readable as data (a getter, a Proxy trap
 * that throws), or an object that is not JSON data (a Map, a Set, a class instance).
 */
export interface CanonicalFailure {
  readonly problem: "bounds" | "unreadable" | "not_data";
}

const PAST_BOUNDS: CanonicalFailure = Object.freeze({ problem: "bounds" });
const UNREADABLE_BODY: CanonicalFailure = Object.freeze({ problem: "unreadable" });
const NOT_DATA: CanonicalFailure = Object.freeze({ problem: "not_data" });

/** Values and characters unbounded; nesting bounded as a keyed body's is, so that a cycle ends. */
const UNBOUNDED: CanonicalBounds = { values: Infinity, length: Infinity, depth: BOUNDS.keyedBodyDepth };

/** A getter of the platform's own, by the prototype that holds it (read once, here). */
const intrinsic = (proto: object, name: PropertyKey): ((this: unknown) => unknown) => Object.getOwnPropertyDescriptor(proto, name)!.get!;
const TYPED = Object.getPrototypeOf(Uint8Array.prototype) as object;
const typedBuffer = intrinsic(TYPED, "buffer");
const typedOffset = intrinsic(TYPED, "byteOffset");
const typedLength = intrinsic(TYPED, "byteLength");
const viewBuffer = intrinsic(DataView.prototype, "buffer");
const viewOffset = intrinsic(DataView.prototype, "byteOffset");
const viewLength = intrinsic(DataView.prototype, "byteLength");
const bufferLength = intrinsic(ArrayBuffer.prototype, "byteLength");
/** A typed array's kind (`"Float32Array"`), of any realm; undefined for anything else (a DataView). */
const typedKind = intrinsic(TYPED, Symbol.toStringTag) as (this: unknown) => string | undefined;

/** Typed arrays whose elements are the bytes themselves: a handler reads the same values from any of them (and from a Buffer, a DataView's bytes, an ArrayBuffer's). */
const BYTE_KINDS: ReadonlySet<string> = new Set(["Uint8Array", "Uint8ClampedArray"]);

/** Bytes, and the kind of typed array they are the elements of when that is not bytes (`"Float32Array"`; undefined for bytes). */
interface Bytes {
  readonly bytes: Uint8Array;
  readonly kind: string | undefined;
}

/**
 * The bytes of a Buffer, typed array, DataView or ArrayBuffer (what a raw body parser hands over),
 * of any realm, read through the platform's own getters, which check what they are called on (an
 * own `buffer` accessor on the object is never run), with the kind of typed array they are the
 * elements of when those are not bytes (a `Float32Array([1])` and the `Uint8Array` of its four
 * bytes are two bodies: a handler reads 1 from one and 0, 0, 128, 63 from the other; both read as
 * the same bytes, found by a security drill); undefined for anything else. Throws for a detached
 * buffer (read as unreadable).
 */
function bytesOf(v: object): Bytes | undefined {
  if (ArrayBuffer.isView(v)) {
    // a typed array's getters throw for a DataView (and the other way round), of any realm
    let view: readonly [unknown, unknown, unknown];
    let kind: string | undefined;
    try {
      view = [typedBuffer.call(v), typedOffset.call(v), typedLength.call(v)];
      kind = typedKind.call(v);
    } catch {
      view = [viewBuffer.call(v), viewOffset.call(v), viewLength.call(v)];
    }
    const bytes = new Uint8Array(view[0] as ArrayBuffer, view[1] as number, view[2] as number);
    return { bytes, kind: kind === undefined || BYTE_KINDS.has(kind) ? undefined : kind };
  }
  let length: unknown;
  try {
    length = bufferLength.call(v); // an ArrayBuffer of any realm; throws for anything else
  } catch {
    return undefined;
  }
  return { bytes: new Uint8Array(v as ArrayBuffer, 0, length as number), kind: undefined };
}

/**
 * A plain object: each prototype on its chain a realm's `Object.prototype` (itself without a
 * prototype, its own `constructor` that realm's `Object`) or an object with no own keys (what
 * fast-querystring, `@fastify/formbody`'s parser, builds a form body on: a rejected form body was a
 * 400 for every keyed form write on Fastify; found by a review): safe-read.ts's `inheritsNothing`,
 * the walk query.ts's `holdsOwnParameters` takes for a query object, with any realm's root. An object that inherits data (a class
 * instance, a Map, or data hung on a prototype a handler reads through: `Object.create({ x: 1 })`
 * read as `{}`) is not data (found by a diff review).
 */
function isPlainObject(v: object, walk: Walk): boolean {
  return inheritsNothing(v, walk.isRoot);
}

/**
 * A realm's `Object.prototype`: this realm's, or one with no prototype that is the `prototype` of
 * its own `constructor`, that realm's native `Object` (a look-alike `function Object() {}` with data
 * on its prototype is not one). Another realm's is told once a walk.
 */
function isObjectPrototype(proto: object, walk: Walk): boolean {
  if (proto === Object.prototype || walk.objectPrototypes?.has(proto) === true) return true;
  if (Object.getPrototypeOf(proto) !== null || !isNativePrototype(proto, NATIVE_OBJECT)) return false;
  (walk.objectPrototypes ??= new Set()).add(proto);
  return true;
}

/** `Function.prototype.toString`: a realm's own `Date` or `Object` reads as the native code no other function writes. */
const functionText = Function.prototype.toString;
/**
 * The text of a realm's native function `name`, as this engine writes it, made from
 * `Function.prototype.toString`'s own text: never read from the global `Date`, which a test's fake
 * timers (a Proxy) or a date mock may have replaced before this module loaded (then every other
 * realm's dates, and structuredClone's, were refused; found by a review).
 */
const nativeText = (name: string): string => functionText.call(functionText).replace("toString", name);
const NATIVE_OBJECT = nativeText("Object");
const NATIVE_DATE = nativeText("Date");

/**
 * Whether `proto` is the `prototype` of its own `constructor`, a realm's native function whose text
 * is `text` ({@link nativeText}; a native constructor's `prototype` cannot be set: a look-alike constructor of
 * that name, or a Proxy, is not one; found by a diff review).
 */
function isNativePrototype(proto: object, text: string): boolean {
  const constructor = presentValue(proto, "constructor");
  return typeof constructor === "function" && functionText.call(constructor) === text && presentValue(constructor, "prototype") === proto;
}

/** `Date.prototype.getTime`, which reads a Date of any realm and throws for anything else (an own `getTime` is never run). */
const dateTime = Date.prototype.getTime;
/**
 * `Object.prototype.toString`: an object's built-in tag (`[object Date]` for a Date of any prototype),
 * unless an own or inherited `Symbol.toStringTag` says otherwise (see {@link isMovedDate}).
 */
const objectTag = Object.prototype.toString;
/** A class's text (`class Stamp extends Date {}`), as `Function.prototype.toString` writes it; a method named `class` is told apart by {@link isConstructor}. */
const CLASS_TEXT = /^class[\s{]/;

/** Whether `f` can be called with `new`: a class can, a method (`{ class() {} }.class`, whose text starts with "class") cannot. Runs none of `f`'s code. */
function isConstructor(f: object): boolean {
  try {
    Reflect.construct(Object, [], f as new () => unknown);
    return true;
  } catch {
    return false;
  }
}

/**
 * A realm's own `Date.prototype`: this realm's, or one whose own `constructor` is that realm's
 * native `Date` (its text the native code no other function has) whose `prototype` it is (a native
 * Date's cannot be set: a look-alike whose constructor is a function named Date, or a Proxy, is not
 * one; found by a diff review), holding no data (data hung on it is read through every date).
 */
function isDatePrototype(proto: object): boolean {
  if (proto === Date.prototype) return true;
  if (!isNativePrototype(proto, NATIVE_DATE)) return false;
  for (const key of Reflect.ownKeys(proto)) {
    if (typeof presentValue(proto, key) !== "function") return false;
  }
  return true;
}

/**
 * The prototype of a class (`class Stamp extends Date {}`, fake timers' `ClockDate`) that adds
 * nothing: its own `constructor` alone, a class (its text, and constructible: a method named
 * `class` given a Proxy `prototype` passed the text; found by a review) whose `prototype` it is. A
 * class's `prototype` is the engine's own object and cannot be set, so a Proxy is never one (a
 * Proxy of an empty object between a date and `Date.prototype` answered a handler's `toISOString`
 * with its own; found by a review of the mends).
 */
function isSubclassPrototype(proto: object): boolean {
  if (!holdsOnlyConstructor(proto)) return false;
  const constructor = presentValue(proto, "constructor");
  return typeof constructor === "function" && CLASS_TEXT.test(functionText.call(constructor)) && presentValue(constructor, "prototype") === proto && isConstructor(constructor);
}

/**
 * Whether `object` carries nothing of its own but, perhaps, a `constructor` function: a date
 * vitest's or sinon's fake timers make (its own `constructor` the native Date), or the prototype of
 * a subclass that adds nothing (`class Stamp extends Date {}`). Anything else (a field, a method
 * that could answer a handler otherwise, a getter) is data the text could not show.
 */
function holdsOnlyConstructor(object: object): boolean {
  const keys = Reflect.ownKeys(object);
  return keys.length === 0 || (keys.length === 1 && keys[0] === "constructor" && typeof presentValue(object, "constructor") === "function");
}

/**
 * A Date as the canonical text writes it, `!date:` and its time (ms, or NaN): what a JSON reviver
 * hands over for a date string (each read as `{}`, every date was one body; then refused as not
 * data, a reviver made every keyed write a 400). Asked when `v`'s prototype is not a plain
 * object's: a date is a Date (of any realm) that carries nothing of its own, on a chain of
 * prototypes that add nothing (a subclass's, fake timers') ending at a realm's own `Date.prototype`
 * ({@link isDatePrototype}). Undefined for anything else, for the caller to read otherwise: a Date
 * of another shape (a subclass with fields or methods, data put between it and `Date.prototype`,
 * own properties, whose text could not tell it from a bare one) is then no plain object and no
 * bytes, so not data; one moved onto a plain object's prototype is told by its built-in tag.
 * The prototype is asked first, so that a date costs about what an object does (asked after the
 * plain-object test, whose walk listed Date.prototype's keys, ~2 µs a date; found by a review).
 */
function dateText(v: object, proto: object, walk: Walk): string | undefined {
  // each step is a class's own prototype (never a Proxy, which could hand one out without end), and
  // an ordinary object's chain of prototypes is finite
  if (walk.datePrototypes?.has(proto) !== true) {
    let at: object | null = proto;
    while (!isDatePrototype(at)) {
      if (!isSubclassPrototype(at)) return undefined;
      at = Object.getPrototypeOf(at) as object | null;
      if (at === null) return undefined;
    }
    (walk.datePrototypes ??= new Set()).add(proto);
  }
  let time: number;
  try {
    time = dateTime.call(v);
  } catch {
    return undefined; // on a Date.prototype but no Date (Object.create(Date.prototype)), or a Proxy of one
  }
  return holdsOnlyConstructor(v) ? `!date:${String(time)}` : undefined;
}

/**
 * Whether a plain object is a Date all the same (its prototype moved onto `Object.prototype` or
 * none), running none of its code: by its built-in tag when it has no own `Symbol.toStringTag` and
 * its prototype is a realm's `Object.prototype` or none (`rooted`: its chain then holds no tag to
 * run or to lie), else by `getTime`, whose throw (~3.5 µs) only such an object pays: one with its own tag, or
 * on prototypes with no keys (fast-querystring's form body, one a body), which a Proxy could be. An
 * own tag ran a getter, and an own tag of "Object", or one a Proxy prototype served, hid a moved
 * date (found by reviews).
 */
function isMovedDate(v: object, rooted: boolean): boolean {
  if (rooted && !Object.hasOwn(v, Symbol.toStringTag)) return objectTag.call(v) === "[object Date]";
  try {
    dateTime.call(v);
    return true;
  } catch {
    return false;
  }
}

/** How many values one bytes value counts as against the values bound: each is one SHA-256 of its own (a few µs however short). */
const BYTES_WEIGHT = 64;

/**
 * Bytes as the canonical text writes them: `!bytes:`, their length and their SHA-256 (hashed as
 * bytes: written as hex, a 512 kB body was a 1 MB text hashed again, ~120 ms; found by a diff
 * review); the elements of a typed array that are not bytes as `!bytes:<kind>:`, then the same.
 */
function bytesText({ bytes, kind }: Bytes): string {
  return `!bytes:${kind === undefined ? "" : `${kind}:`}${bytes.length}:${sha256BytesHex(bytes)}`;
}

/**
 * A canonical text of a JSON-like value: object keys sorted, strings and keys as `JSON.stringify`
 * writes them (so lone surrogates are escaped and the text is well-formed). Two values give the same
 * text exactly when they are the same JSON (whatever their key order). Never throws and never
 * recurses. Values the JSON parser cannot produce get a tag of their own (`undefined` and an
 * array's hole alike, functions, bigints), bytes (a Buffer, a typed array, an ArrayBuffer: what
 * a raw body parser hands over) read as `!bytes:`, the kind of a typed array whose elements are not
 * bytes, their length and their SHA-256, and a date as `!date:` and its time. Nesting is bounded
 * (`depth`), and a cycle is past any bound: a value that holds itself has no text (it used to read
 * as `!cycle`; the set of open containers that told it cost more than the rest of a deep body's walk).
 *
 * Read as the descriptor is (request.ts): own data properties only, every trap inside try/catch. A
 * getter is never run, and a body that cannot be read that way (a getter, a Proxy trap that
 * throws), or holds an object that is not data (a Map, a Set, a class instance: each would
 * read as `{}`, so two of them made two bodies one), has no text: a key bound to a body it could not
 * read turned a second, different body into a replay instead of a 409 (found by a hostile-input drill).
 *
 * One frame per array or object, not per value, and the text built as one string (a frame per value
 * made a 500 000-element body cost ~280 ms; an array of parts joined at the end, with every value
 * read when its container was opened, ~1 µs a value); the text of JSON data is the same as
 * before, so that a key recorded before an upgrade still matches.
 *
 * @param bounds - values and characters at most: past either, {@link CanonicalFailure} `bounds`
 *   (the work stops there; a container's size and a string's, key's or bytes' length are checked
 *   before they are read; bytes count against the length bound one character a byte).
 */
export function canonicalJson(value: unknown, bounds: CanonicalBounds = UNBOUNDED): string | CanonicalFailure {
  const stack: Open[] = [];
  const walk = newWalk();
  let out = "";
  // bytes hashed into the text's digests: counted against the length bound as the text is
  let hashed = 0;
  let count = 0;
  let v = value;
  for (;;) {
    // write v: a primitive's text, or the opening of an array or object
    if (++count > bounds.values) return PAST_BOUNDS;
    if (v === null) out += "null";
    else if (typeof v === "string") {
      // its JSON text is at least its length and two quotes: a string past the bound is not copied to learn so
      if (out.length + hashed + v.length + 2 > bounds.length) return PAST_BOUNDS;
      out += JSON.stringify(v);
    } else if (typeof v === "number") out += Number.isFinite(v) ? String(v) : `!${String(v)}`; // String is JSON.stringify for a finite number
    else if (typeof v === "boolean") out += v ? "true" : "false";
    else if (typeof v === "bigint") out += `!${v}n`;
    // a function is no data, and its code is not read: every function would be one body (found by a shapes drill: a body of `() => 2` replayed `function a(){}`)
    else if (typeof v === "function") return NOT_DATA;
    else if (typeof v !== "object") out += `!${typeof v}`;
    else {
      // one more array or object inside the open ones: past the bound before it is read
      if (stack.length >= bounds.depth) return PAST_BOUNDS;
      const opening = opened(v, stack, bounds.values - count, walk);
      if (typeof opening === "string") out += opening;
      else if ("bytes" in opening) {
        // bytes: their length before any is read; each is hashed on its own, so each counts as
        // BYTES_WEIGHT values (14 000 empty ones were 14 000 hashes, ~80 ms; found by a review)
        count += BYTES_WEIGHT - 1;
        if (count > bounds.values) return PAST_BOUNDS;
        if (out.length + hashed + opening.bytes.length > bounds.length) return PAST_BOUNDS;
        hashed += opening.bytes.length;
        out += bytesText(opening);
      } else return opening;
    }
    if (out.length + hashed > bounds.length) return PAST_BOUNDS;
    // the next value to write, closing what is done
    let top = stack[stack.length - 1];
    while (top !== undefined && top.next === top.size) {
      out += top.keys === undefined ? "]" : "}";
      stack.pop();
      top = stack[stack.length - 1];
    }
    if (top === undefined) return out;
    const i = top.next++;
    if (top.keys === undefined) {
      if (i > 0) out += ",";
      v = presentValue(top.container, i);
    } else {
      const key = top.keys[i]!;
      // a key's length, like a string's, before it is copied
      if (out.length + hashed + key.length + 3 > bounds.length) return PAST_BOUNDS;
      out += i > 0 ? `,${JSON.stringify(key)}:` : `${JSON.stringify(key)}:`;
      v = presentValue(top.container, key);
    }
    if (v === UNREADABLE) return UNREADABLE_BODY;
  }
}

/**
 * Opens an array or a plain object: checks its size against `room` before any of its values is
 * read and pushes its frame, answering the text that opens it; or answers a date's whole text (no
 * frame), or the bytes of a Buffer, typed array, DataView or ArrayBuffer (unread), for the caller
 * to bound and write; or why it has no text.
 */
function opened(v: object, stack: Open[], room: number, walk: Walk): string | Bytes | CanonicalFailure {
  try {
    if (Array.isArray(v)) {
      // Array.isArray throws for a revoked Proxy
      const size = presentValue(v, "length");
      if (typeof size !== "number") return UNREADABLE_BODY;
      // more elements than values left: past the bound before any is read
      if (size > room) return PAST_BOUNDS;
      stack.push({ container: v, keys: undefined, size, next: 0 });
      return "[";
    }
    // views of any prototype (one on none read as the object of its indexes; found by a diff
    // review); a date by its prototype, before the plain-object walk (which lists a prototype's
    // keys); then bare buffers (telling an object from an ArrayBuffer throws)
    if (ArrayBuffer.isView(v)) return bytesOf(v) ?? NOT_DATA;
    const proto = Object.getPrototypeOf(v) as object | null;
    // on a realm's Object.prototype or none: plain, with no walk of its chain
    const rooted = proto === null || isObjectPrototype(proto, walk);
    if (!rooted) {
      const date = dateText(v, proto, walk);
      if (date !== undefined) return date;
      if (!isPlainObject(v, walk)) return bytesOf(v) ?? NOT_DATA;
    }
    // a Date moved onto Object.prototype or none (read as {}, its time dropped, while a handler's
    // new Date(x) still reads it; found by a diff review) is not data
    if (isMovedDate(v, rooted)) return NOT_DATA;
    const names = Object.keys(v);
    if (names.length > room) return PAST_BOUNDS; // before the sort, which grows faster than the listing
    const keys = names.sort();
    stack.push({ container: v, keys, size: keys.length, next: 0 });
    return "{";
  } catch {
    return UNREADABLE_BODY;
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
 *   A {@link CanonicalFailure} when the body is past the bounds a fingerprint reads
 *   (BOUNDS.keyedBodyValues and keyedBodyLength: docs/security.md), cannot be read, or is not data:
 *   the plan refuses it, having done no more work than that.
 */
export function requestFingerprint(method: string, path: string, query: ReadonlyMap<string, readonly string[]>, body: unknown, newsletter?: string): string | CanonicalFailure {
  const names = [...query.keys()].sort();
  const queryText = JSON.stringify(names.map((name) => [name, query.get(name)]));
  // the query is bounded by the descriptor's reading; the body only here, before the work that grows with it
  const bodyText = canonicalJson(body, KEYED_BODY);
  if (typeof bodyText !== "string") return bodyText;
  // a newsletter the path does not name (the descriptor's, as the host resolved it) is part of the
  // request: one key sent to two newsletters is two requests (DESIGN §7: a conflict), never a replay
  // on the other newsletter's cap (found by a review of RedisStore on a cluster: the two-step send
  // then counted a key twice, or answered a full cap with a replay)
  const text = newsletter === undefined ? `${queryText}\n${bodyText}` : `${queryText}\n${bodyText}\n${JSON.stringify(newsletter)}`;
  const hash = sha256Hex(text).slice(0, HASH_HEX);
  // the path as Redis can carry it (utf8Safe): two paths that differ in a lone surrogate stay two
  return `${method} ${utf8Safe(path)} ${hash}`;
}

const KEYED_BODY: CanonicalBounds = { values: BOUNDS.keyedBodyValues, length: BOUNDS.keyedBodyLength, depth: BOUNDS.keyedBodyDepth };

/** The `METHOD /path` part of a fingerprint, for messages. */
export function describeFingerprint(fingerprint: string): string {
  return fingerprint.replace(HASH_SUFFIX, "");
}
