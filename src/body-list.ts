/** Reading a bounded list field of a request's JSON body (test send `to`, tagging `subscribers`). */
import type { ListField } from "./catalogue.js";
import { BOUNDS } from "./bounds.js";
import { isArray, ownValue, readStrings } from "./safe-read.js";

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
