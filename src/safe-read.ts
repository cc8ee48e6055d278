/**
 * Reading untrusted values without running their code: own data properties only (no getter, no
 * prototype), every Proxy trap inside try/catch, every size bounded before the work that grows
 * with it. Nothing here throws.
 */

/** Percent-decoding that answers null instead of throwing. */
export function decode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** What a read answers for an accessor, or when a trap throws. */
export const UNREADABLE: unique symbol = Symbol("unreadable");

/** An own data property, read once; `UNREADABLE` when it is an accessor or a trap throws. */
export function ownValue(object: object, name: PropertyKey): unknown {
  try {
    // most fields are absent: the own-property test is a fast builtin, the descriptor an allocation
    if (!Object.hasOwn(object, name)) return undefined;
  } catch {
    return UNREADABLE;
  }
  return presentValue(object, name);
}

/**
 * {@link ownValue} without the own-property test first, for a property that is usually there (a
 * descriptor's `method` and `path`): the test pays off only for absent ones.
 */
export function presentValue(object: object, name: PropertyKey): unknown {
  try {
    const property = Object.getOwnPropertyDescriptor(object, name);
    if (property === undefined) return undefined;
    return "value" in property ? property.value : UNREADABLE;
  } catch {
    return UNREADABLE;
  }
}

/**
 * Whether `value` inherits nothing a reader of its own properties would miss: each prototype on its
 * chain a root (`isRoot`: `Object.prototype`, or any realm's) or an object with no own keys (what
 * fast-querystring builds on), at most four of those; no prototype at all is fine too. Runs a Proxy's
 * traps: the caller catches what they throw.
 */
export function inheritsNothing(value: object, isRoot: (proto: object) => boolean): boolean {
  let proto = Object.getPrototypeOf(value) as object | null;
  for (let depth = 0; proto !== null; depth++) {
    if (isRoot(proto)) return true;
    if (depth >= 4 || Reflect.ownKeys(proto).length > 0) return false;
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return true;
}

export function isArray(value: unknown): boolean | typeof UNREADABLE {
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
export function readStrings(array: object, max: number, maxLength: number): string[] | string {
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
export function ownNames(object: object, max: number): string[] | null {
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
