/**
 * A script as the store sends it (its source for `EVAL`, its SHA-1 for `EVALSHA`), and the reading
 * of replies shared by the scripts' decoders.
 *
 * Each script's SHA-1 is a literal beside its source, so loading the store hashes nothing (and needs
 * no `node:crypto`); test/redis/scripts/scripts.test.ts checks every literal against its source.
 */
import type { WindowReading } from "../../store.js";

/** A script and its SHA-1, for `EVALSHA` with an `EVAL` fallback. */
export interface Script {
  readonly source: string;
  readonly sha: string;
}

/** KEYS and ARGV of one script call, as an encoder builds them. */
export interface ScriptCall {
  readonly keys: string[];
  readonly args: string[];
}

/** `body` as the body of a Lua block: every line indented by two spaces (blank lines stay blank). */
export function indented(body: string): string {
  return body
    .split("\n")
    .map((line) => (line === "" ? line : `  ${line}`))
    .join("\n");
}

/** A part of a script's reply: a string, or a number as a client hands an integer reply over. */
export type Part = string | number;

/**
 * A reply that must be an array: its strings and numbers as the client handed them over (a number
 * is read with `Number` as its text would be; written out as text and read back, the Redis times
 * and window ends of a reply were a seventh of the host's time per charge), anything else (a
 * Buffer) as its text.
 */
export function parts(reply: unknown, what: string): Part[] {
  if (!Array.isArray(reply)) throw new Error(`newsletter-policy/redis: unexpected reply to ${what}: ${String(reply)}`);
  const out: Part[] = new Array<Part>(reply.length);
  for (let i = 0; i < reply.length; i++) {
    const part: unknown = reply[i];
    out[i] = typeof part === "string" || typeof part === "number" ? part : String(part);
  }
  return out;
}

/** A part read as text (a flag, a kind, a member's name), whether the client handed it over as a string or a number. */
export function text(part: Part | undefined): string | undefined {
  return typeof part === "number" ? String(part) : part;
}

/** Windows as the scripts reply with them: count_1, resetAt_1, count_2, resetAt_2, … (from part `from`, before part `to`). */
export function readings(flat: readonly Part[], from = 0, to = flat.length): WindowReading[] {
  const out: WindowReading[] = [];
  for (let i = from; i + 1 < to; i += 2) out.push({ count: Number(flat[i]), resetAt: Number(flat[i + 1]) });
  return out;
}

/** The way a script that answers with one integer says yes. */
export function isOne(reply: unknown): boolean {
  return Number(reply) === 1;
}
