/**
 * How store keys are spelled. Every id is length-prefixed, so that no two (credential, name) pairs
 * can ever spell the same key, whatever characters the ids hold.
 */
import type { BudgetSpec } from "./config-types.js";
import { Recent } from "./recent.js";
import type { BudgetCharge } from "./store.js";
import type { CapName, Credential } from "./types.js";

// Keys are joined, not concatenated: `join` makes one flat string, where `+` and templates make a
// chain of pieces that a store holding the key keeps alive (and flattens again when it hashes it).
function scoped(kind: string, id: string): string {
  return [kind, ":", id.length, ".", id].join("");
}

/** A lone surrogate or U+FFFD: what UTF-8 cannot carry as it is, or what stands for it once lost. */
const NOT_UTF8_SAFE = /[\uD800-\uDFFF\uFFFD]/;

/**
 * An id as it can cross to Redis and back unchanged, one to one. Redis clients write strings as
 * UTF-8, where every lone surrogate becomes U+FFFD: `x\uD800`, `x\uDC00` and `x\uFFFD` would spell
 * one Redis key, and two credentials or newsletters would share counters and Idempotency-Keys
 * (found by a review of RedisStore with hostile ids). A lone surrogate, and U+FFFD itself, is
 * written as U+FFFD and its four hex digits; surrogate pairs and everything else stay as they are.
 * Every U+FFFD of the result starts such an escape, so no two ids give one result. The same in
 * every store, so that MemoryStore and RedisStore keep the same keys.
 */
export function utf8Safe(text: string): string {
  if (!NOT_UTF8_SAFE.test(text)) return text;
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += text.slice(i, i + 2); // a pair: a character UTF-8 carries
        i++;
        continue;
      }
    }
    out += (c >= 0xd800 && c <= 0xdfff) || c === 0xfffd ? `\uFFFD${c.toString(16).padStart(4, "0")}` : text[i];
  }
  return out;
}

/**
 * One subject and the budget charges built for it (charge-request.ts `budgetCharges`): per budget
 * list it was charged with (one per operation shape of each config, looked up by identity, the
 * lists being the compiled config's), the store's keys and limits, built once.
 *
 * A subject the cache did not keep (`kept` false: many credentials in rotation) holds no lists: its
 * charges are built for the one request, and by other code than a kept subject's. V8 decides per
 * allocation site (each object or array literal) whether what it allocates goes straight to the
 * old generation, from how much of it outlived a collection. Kept values outlive collections; had
 * one-use values come from the same literals, they would be allocated old too, and the young ones
 * they point to (the charges, the key strings) would be promoted by every collection until the next
 * full one: at 1 000 000 credentials about 450 bytes per check, and a sixth of its time.
 */
export class SubjectKeys {
  readonly lists: (readonly BudgetSpec[])[] | undefined;
  readonly charges: (readonly BudgetCharge[])[] | undefined;
  constructor(
    readonly subject: string,
    kept: boolean,
  ) {
    this.lists = kept ? [] : undefined;
    this.charges = kept ? [] : undefined;
  }
}

/**
 * Recent subjects by credential id, one cache per kind: the same string each time (its hash is
 * computed once) and the same charges, found with one lookup per request.
 */
const recentSubjects = { k: new Recent<SubjectKeys>(4096), o: new Recent<SubjectKeys>(4096) };

/**
 * Whose counters, with the budget charges built for them: spec §5.1 and §8.3 count budgets per API
 * key or per OAuth authorisation, so an API key and an authorisation that share an id never share a budget.
 */
export function subjectKeysOf(credential: Pick<Credential, "id" | "kind">): SubjectKeys {
  const kind = credential.kind === "oauth" ? "o" : "k";
  const id = credential.id;
  const recent = recentSubjects[kind];
  const entry = recent.get(id);
  if (entry !== undefined) return entry;
  const subject = [kind, ".", utf8Safe(id)].join("");
  if (!recent.admit()) return new SubjectKeys(subject, false);
  const kept = new SubjectKeys(subject, true);
  recent.set(id, kept);
  return kept;
}

/** Whose counters (see {@link subjectKeysOf}). */
export function subjectOf(credential: Pick<Credential, "id" | "kind">): string {
  return subjectKeysOf(credential).subject;
}

/** The store key of one credential's budget. */
export function budgetKey(subject: string, budget: string): string {
  return ["b:", subject.length, ".", subject, ":", budget].join(""); // scoped("b", subject) + ":" + budget
}

/**
 * {@link budgetKey} for a charge built for one request (a subject the key cache did not keep): the
 * same text, concatenated. The pieces stay a chain V8 flattens only if something hashes or reads
 * the key, and `MemoryStore` reads the charge's subject and budget instead: at 1 000 000
 * credentials the flat key was ~5 % of a check.
 */
export function oneUseBudgetKey(subject: string, budget: string): string {
  return "b:" + subject.length + "." + subject + ":" + budget;
}

/**
 * Where the subject of a budget key ends: the index of the ":" after it, read by the length the key
 * gives (`b:<length>.<subject>:`: no search of the key, no string made), or -1 for a string
 * {@link budgetKey} does not spell that way (no length, a leading zero, no "." or ":" where the
 * length says). `evaluate` places every budget window of its snapshot by it.
 */
export function budgetSubjectEnd(key: string): number {
  if (key.charCodeAt(0) !== 98 || key.charCodeAt(1) !== 58) return -1; // "b:"
  let length = 0;
  let i = 2;
  for (let c = key.charCodeAt(i); c >= 48 && c <= 57 && i < 17; c = key.charCodeAt(++i)) length = length * 10 + (c - 48);
  if (i === 2 || (key.charCodeAt(2) === 48 && i > 3) || key.charCodeAt(i) !== 46) return -1; // digits, no leading zero, "."
  const end = i + 1 + length;
  return key.charCodeAt(end) === 58 ? end : -1;
}

/**
 * The subject and budget a budget key is spelled from ({@link budgetKey} read back), or undefined
 * for any string `budgetKey` does not spell (a key a host built by hand) or that names no budget.
 */
export function budgetKeyParts(key: string): { readonly subject: string; readonly budget: string } | undefined {
  const end = budgetSubjectEnd(key);
  if (end < 0 || end === key.length - 1) return undefined;
  return { subject: key.slice(key.indexOf(".") + 1, end), budget: key.slice(end + 1) };
}

/** Spec §8: dispatches are counted per newsletter across credentials, test sends per credential. */
export function capKey(cap: CapName, subject: string, newsletter: string): string {
  return cap === "dispatch" ? scoped("d", utf8Safe(newsletter)) : scoped("t", subject);
}

/** The credential's idempotency scope: every one of its record keys is `<scope>:<key>`. */
export function idempotencyScope(subject: string): string {
  return scoped("k", subject);
}

/** DESIGN §7: a key is scoped to the credential: its record is `<scope>:<key>` (`scope` from `idempotencyScope`). */
export function idempotencyKey(scope: string, key: string): string {
  return [scope, ":", key].join("");
}
