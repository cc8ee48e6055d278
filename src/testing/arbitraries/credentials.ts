/** Arbitraries of who asks: levels, families, per-family grants, credentials and the owner's roles. */
import fc from "fast-check";
import { FAMILIES, LEVELS } from "../../permissions.js";
import type { Credential, Family, Grants, Level } from "../../types.js";
import { NEWSLETTER_IDS } from "./vocabulary.js";

/** A level: `none`, `read` or `write`. */
export const arbLevel: fc.Arbitrary<Level> = fc.constantFrom(...LEVELS);

/** A family of spec §2. */
export const arbFamily: fc.Arbitrary<Family> = fc.constantFrom(...FAMILIES);

/**
 * Per-family grants as selected when a key is minted; families may be left out.
 *
 * @example
 * fc.assert(fc.property(arbGrants(), (grants) => typeof grants === "object"));
 */
export function arbGrants(options: { readOnly?: boolean } = {}): fc.Arbitrary<Grants> {
  const levels: Level[] = options.readOnly ? ["none", "read", "read"] : ["none", "read", "read", "write", "write", "write"];
  // a family is left out one time in four (left out = none)
  const level = fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: fc.constantFrom(...levels) });
  return fc.tuple(...FAMILIES.map((f) => level.map((l) => [f, l] as const))).map((entries) => {
    const grants: Grants = {};
    for (const [f, l] of entries) if (l !== undefined) grants[f] = l;
    return grants;
  });
}

/** Builds an object whose keys are own data properties, even `__proto__`. */
export function own<V>(entries: readonly (readonly [string, V])[]): Record<string, V> {
  return Object.fromEntries(entries) as Record<string, V>;
}

/** Options of {@link arbCredential}. */
export interface CredentialArbitraryOptions {
  /** The credential's id. Default: `key_1`…`key_3`. */
  id?: fc.Arbitrary<string>;
  /** Newsletters it may be granted. Default {@link NEWSLETTER_IDS}. */
  newsletters?: readonly string[];
}

/**
 * A credential (API key or OAuth) granted on a subset of the newsletters, with or without
 * `account: read`.
 *
 * @param options - `id` and the `newsletters` to draw grants from (default {@link NEWSLETTER_IDS}).
 * @returns an arbitrary of {@link Credential}; grants are own properties of a plain object.
 * @example
 * fc.assert(fc.property(arbCredential(), (credential) => {
 *   const { decision } = evaluate({ method: "GET", path: "/me" }, { credential, roles: {}, usage: emptyUsage(), now: 0 });
 *   return decision.status === (credential.account ? 200 : 403);
 * }));
 */
export function arbCredential(options: CredentialArbitraryOptions = {}): fc.Arbitrary<Credential> {
  const ids = options.newsletters ?? NEWSLETTER_IDS;
  return fc
    .record({
      id: options.id ?? fc.constantFrom("key_1", "key_2", "key_3"),
      kind: fc.constantFrom<Credential["kind"]>("api_key", "oauth"),
      // most newsletters granted, so that traces reach past 404 and spend budgets and caps
      // one credential in three is read-only (spec §5.7): it meets the reader filters
      grants: fc.nat({ max: 2 }).chain((mode) =>
        fc.tuple(...ids.map((id) => fc.option(arbGrants({ readOnly: mode === 0 }).map((g) => [id, g] as const), { freq: 5, nil: undefined }))),
      ),
      account: fc.boolean(),
    })
    .map(({ id, kind, grants, account }) => ({ id, kind, newsletters: own(grants.filter((g) => g !== undefined)), account }));
}

/**
 * The credential owner's current roles: a role (possibly one no config knows) on some newsletters.
 *
 * @param newsletters - the newsletters that may carry a role (default {@link NEWSLETTER_IDS}).
 * @returns an arbitrary of a plain roles object; newsletters left out have no role (not reached).
 * @example
 * fc.assert(fc.property(arbRoles(), (roles) => !Object.hasOwn(roles, "constructor")));
 */
export function arbRoles(newsletters: readonly string[] = NEWSLETTER_IDS): fc.Arbitrary<Record<string, string>> {
  return fc
    .tuple(...newsletters.map((id) => fc.option(arbRoleName().map((role) => [id, role] as const), { freq: 6, nil: undefined })))
    .map((entries) => own(entries.filter((e) => e !== undefined)));
}

/**
 * A role name: mostly `owner`, `admin`, `editor` or `analyst`, sometimes `ghost` (unknown to every config).
 *
 * @example
 * fc.sample(arbRoleName(), 3); // e.g. ["owner", "editor", "analyst"]
 */
export function arbRoleName(): fc.Arbitrary<string> {
  return fc.constantFrom("owner", "owner", "admin", "editor", "editor", "analyst", "ghost");
}
