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

/** A reply that must be an array, as strings. */
export function strings(reply: unknown, what: string): string[] {
  if (!Array.isArray(reply)) throw new Error(`newsletter-policy/redis: unexpected reply to ${what}: ${String(reply)}`);
  return reply.map(String);
}

/** Windows as the scripts reply with them: count_1, resetAt_1, count_2, resetAt_2, … (from part `from`, before part `to`). */
export function readings(flat: readonly string[], from = 0, to = flat.length): WindowReading[] {
  const out: WindowReading[] = [];
  for (let i = from; i + 1 < to; i += 2) out.push({ count: Number(flat[i]), resetAt: Number(flat[i + 1]) });
  return out;
}

/** The way a script that answers with one integer says yes. */
export function isOne(reply: unknown): boolean {
  return Number(reply) === 1;
}
