/**
 * Request ids (DESIGN §13, §14): `req_<id>`, from the host's id, the policy's generator, or, in the
 * pure API, derived from the inputs so that the same inputs always give the same id.
 */
import { fnv1a } from "./hash.js";
import type { DescriptorRead } from "./request.js";

/** 64 bits of two FNV-1a hashes: a short stable id derived from the inputs (DESIGN §14). */
export function derivedId(parts: readonly (string | number)[]): string {
  const text = parts.join("\u0000");
  return fnv1a(text).toString(16).padStart(8, "0") + fnv1a(text, 0x01000193, 2246822519).toString(16).padStart(8, "0");
}

/**
 * The parts of a descriptor that tell two requests apart, as text for a derived id: read from the
 * descriptor as `plan` read it (once, plain values only), each part bounded, so it never throws and
 * costs the same for a 10 MB string as for a short one.
 */
export function describeInput(read: DescriptorRead): string {
  const query = read.query instanceof Map ? read.query : undefined;
  const text = (value: unknown): string => (typeof value === "string" ? value.slice(0, 512) : typeof value);
  let out = `${text(read.method)} ${text(read.path)} ${text(read.idempotencyKey)} ${text(read.newsletter)}`;
  if (query !== undefined) for (const [name, values] of query) out += ` ${name}=${values.join(",").slice(0, 512)}`;
  return out;
}

/** `req_<id>`: the host's id (prefixed when it lacks `req_`), or the fallback. */
export function requestIdOf(given: string | undefined, fallback: () => string): string {
  if (given === undefined || given === "req_") return `req_${fallback()}`;
  return given.startsWith("req_") ? given : `req_${given}`;
}
