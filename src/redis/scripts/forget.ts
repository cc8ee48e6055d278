/**
 * The forget script: an idempotency record a charge wrote, deleted when it is still that one (the
 * same fingerprint and end, no cap charge in it). `createPolicy` asks for it when a keyed write the
 * store gave up on was made after all (`ChargeRequest.late`): its retry then runs, not a replay of a
 * write that never went out. One slot on a cluster: the record and the credential's index share the
 * credential's hash tag.
 */
import type { RecordTicket } from "../../store.js";
import { indexKey } from "../key-layout.js";
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 the idempotency record, 2 [the credential's index of records].
 * ARGV: 1 fingerprint, 2 the record's end (ms). Reply: 1 when it was that record and is gone, else 0.
 */
export const FORGET: Script = {
  source: `-- KEYS and ARGV, named (forgetCall in scripts/forget.ts builds them)
local record, index = KEYS[1], KEYS[2]
local fingerprint, ends = ARGV[1], tonumber(ARGV[2])

-- mirrors MemoryStore.forget (src/memory-store.ts): that charge's record only, never one that carries
-- a cap charge (m, d; c on a cluster) or one written again since (another end)
local r = redis.call('HMGET', record, 'f', 'e', 'm', 'c')
local e = tonumber(r[2])
if r[1] ~= fingerprint or r[3] or r[4] or not e or math.abs(e - ends) >= 1 then return 0 end
redis.call('DEL', record)
if index then redis.call('ZREM', index, record) end
return 1
`,
  sha: "f4017103e9abedd18c1dbc5f277a66c1bd5b8c2f",
};

/** Encodes a `FORGET` call; `key` names a store key in Redis. */
export function forgetCall(ticket: RecordTicket, key: (storeKey: string) => string): ScriptCall {
  const keys = [key(ticket.key)];
  if (ticket.scope !== undefined) keys.push(key(indexKey(ticket.scope)));
  return { keys, args: [ticket.fingerprint, String(ticket.expiresAt)] };
}

/** Decodes a `FORGET` reply: the record was that one, and is gone. */
export const decodeForget: (reply: unknown) => boolean = isOne;
