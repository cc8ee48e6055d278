/**
 * OAuth (spec §5.3): an app requests `<family>:<level>` scopes and `account:read`; the scopes
 * granted are read from the token response.
 */
import { PolicyConfigError } from "./errors.js";
import { FAMILIES, satisfies } from "./permissions.js";
import type { Credential, Family, Grants, Level } from "./types.js";

/** What the token response and the authorisation give. */
export interface ScopeGrant {
  /** The authorisation's id; budgets are counted per authorisation (spec §5.1). */
  id: string;
  /** The granted scopes: a space-separated string as in the token response, or an array. */
  scope: string | readonly string[];
  /** The newsletters the authorisation covers. */
  newsletters: readonly string[];
}

/**
 * Builds a credential from granted OAuth scopes. Unknown scopes are ignored (the full scope list
 * is not in the spec), and so is a token holding whitespace other than the space between tokens
 * (RFC 6749 §3.3); a family granted twice keeps the higher level.
 *
 * @param grant - `{ id, scope, newsletters }`.
 * @returns an `oauth` {@link Credential} holding the scopes on every covered newsletter.
 * @throws PolicyConfigError when `id`, `scope` or `newsletters` has the wrong type.
 * @example
 * credentialFromScopes({ id: "auth_1", scope: "audience:read account:read", newsletters: ["nl_1"] });
 */
export function credentialFromScopes(grant: ScopeGrant): Credential {
  if (typeof grant?.id !== "string" || grant.id === "") throw new PolicyConfigError("id", "must be a non-empty string");
  // RFC 6749 §3.3: scope tokens are separated by a space (U+0020) and hold none; a token with any other
  // whitespace in it (a no-break space) is no scope of this API, and is ignored like any unknown one
  const scopes = typeof grant.scope === "string" ? grant.scope.split(" ") : grant.scope;
  if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== "string")) {
    throw new PolicyConfigError("scope", "must be a space-separated string or an array of strings");
  }
  if (!Array.isArray(grant.newsletters) || grant.newsletters.some((n) => typeof n !== "string")) {
    throw new PolicyConfigError("newsletters", "must be an array of newsletter ids");
  }
  const grants: Record<Family, Level> = Object.fromEntries(FAMILIES.map((f) => [f, "none"])) as Record<Family, Level>;
  let account = false;
  for (const scope of scopes) {
    if (scope === "account:read") {
      account = true;
      continue;
    }
    // exactly `<family>:<level>`: a scope with more parts (`sending:write:test`) is another, narrower
    // scope of the authorisation server's, not this family's level, and is ignored like any unknown one
    const parts = scope.split(":");
    if (parts.length !== 2) continue;
    const [family, level] = parts as [string, string];
    if (!(FAMILIES as readonly string[]).includes(family) || (level !== "read" && level !== "write")) continue;
    const f = family as Family;
    if (!satisfies(grants[f], level)) grants[f] = level;
  }
  const held: Grants = {};
  for (const f of FAMILIES) if (grants[f] !== "none") held[f] = grants[f];
  const newsletters: Record<string, Grants> = {};
  for (const id of grant.newsletters) {
    // defineProperty: `__proto__` is an ordinary id here; a repeated id is read once
    if (!Object.hasOwn(newsletters, id)) Object.defineProperty(newsletters, id, { value: { ...held }, enumerable: true, writable: false });
  }
  return { id: grant.id, kind: "oauth", newsletters, account };
}
