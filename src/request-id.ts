/**
 * Request ids (DESIGN §13, §14): `req_<id>`, from the host's id, the policy's generator, or, in the
 * pure API, derived from the inputs so that the same inputs always give the same id.
 */
import type { DescriptorRead } from "./request.js";

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
 * A policy's request ids (`Decision.requestId`): the host's (see {@link requestIdOf}), else one from
 * `generateId`; with the default generator, `req_` and the id are built in one step.
 */
export function requestIds(generateId: () => string): (given: string | undefined) => string {
  if (generateId !== randomId) return (given) => requestIdOf(given, generateId);
  return (given) => (given === undefined || given === "req_" ? nextId("req_") : requestIdOf(given, randomId));
}

/**
 * 64 bits of two FNV-1a hashes of the parts joined by NUL: a short stable id derived from the inputs
 * (DESIGN §14). Both hashes in one pass over the parts, without building the joined text (the same
 * id as `fnv1a` of it, with the second basis and prime; test/evaluate.test.ts holds the two together).
 */
export function derivedId(parts: readonly (string | number)[]): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let p = 0; p < parts.length; p++) {
    if (p > 0) (a = Math.imul(a, 16777619)), (b = Math.imul(b, 2246822519)); // the NUL between parts (x ^ 0 = x)
    const text = String(parts[p]);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 16777619);
      b = Math.imul(b ^ c, 2246822519);
    }
  }
  return hex8(a) + hex8(b);
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
