/**
 * How store keys are spelled. Every id is length-prefixed, so that no two (credential, name) pairs
 * can ever spell the same key, whatever characters the ids hold.
 */
import { Recent } from "./recent.js";
import type { CapName, Credential } from "./types.js";

// Keys are joined, not concatenated: `join` makes one flat string, where `+` and templates make a
// chain of pieces that a store holding the key keeps alive (and flattens again when it hashes it).
function scoped(kind: string, id: string): string {
  return [kind, ":", id.length, ".", id].join("");
}

/** Recent subjects by credential id, one cache per kind: the same string each time, so its hash is computed once. */
const recentSubjects = { k: new Recent<string>(4096), o: new Recent<string>(4096) };

/**
 * Whose counters: spec §5.1 and §8.3 count budgets per API key or per OAuth authorisation, so an
 * API key and an authorisation that happen to share an id never share a budget.
 */
export function subjectOf(credential: Pick<Credential, "id" | "kind">): string {
  const kind = credential.kind === "oauth" ? "o" : "k";
  const id = credential.id;
  const recent = recentSubjects[kind];
  let subject = recent.get(id);
  if (subject === undefined) {
    subject = [kind, ".", id].join("");
    recent.add(id, subject);
  }
  return subject;
}

/** The store key of one credential's budget. */
export function budgetKey(subject: string, budget: string): string {
  return ["b:", subject.length, ".", subject, ":", budget].join(""); // scoped("b", subject) + ":" + budget
}

/** Spec §8: dispatches are counted per newsletter across credentials, test sends per credential. */
export function capKey(cap: CapName, subject: string, newsletter: string): string {
  return cap === "dispatch" ? scoped("d", newsletter) : scoped("t", subject);
}

/** The credential's idempotency scope: every one of its record keys is `<scope>:<key>`. */
export function idempotencyScope(subject: string): string {
  return scoped("k", subject);
}

/** DESIGN §7: a key is scoped to the credential: its record is `<scope>:<key>` (`scope` from `idempotencyScope`). */
export function idempotencyKey(scope: string, key: string): string {
  return [scope, ":", key].join("");
}
