/**
 * How store keys are spelled. Every id is length-prefixed, so that no two (credential, name) pairs
 * can ever spell the same key, whatever characters the ids hold.
 */
import type { CapName, Credential } from "./types.js";

function scoped(kind: string, id: string): string {
  return `${kind}:${id.length}.${id}`;
}

/**
 * Whose counters: spec §5.1 and §8.3 count budgets per API key or per OAuth authorisation, so an
 * API key and an authorisation that happen to share an id never share a budget.
 */
export function subjectOf(credential: Pick<Credential, "id" | "kind">): string {
  return `${credential.kind === "oauth" ? "o" : "k"}.${credential.id}`;
}

/** The store key of one credential's budget. */
export function budgetKey(subject: string, budget: string): string {
  return `${scoped("b", subject)}:${budget}`;
}

/** Spec §8: dispatches are counted per newsletter across credentials, test sends per credential. */
export function capKey(cap: CapName, subject: string, newsletter: string): string {
  return cap === "dispatch" ? scoped("d", newsletter) : scoped("t", subject);
}

/** The credential's idempotency scope: every one of its record keys is `<scope>:<key>`. */
export function idempotencyScope(subject: string): string {
  return scoped("k", subject);
}

/** DESIGN §7: a key is scoped to the credential. */
export function idempotencyKey(subject: string, key: string): string {
  return `${idempotencyScope(subject)}:${key}`;
}
