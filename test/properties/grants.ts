/** Grants for the memo properties: one family's grant changed, the rest kept. */
import { FAMILIES } from "../../src/permissions.js";
import type { Grants } from "../../src/index.js";

/** `before` with the grant of family number `pick` (in the spec's order) taken from `other` (left out when `other` has none). */
export function withFamilyOf(before: Grants, other: Grants, pick: number): Grants {
  const family = FAMILIES[pick % FAMILIES.length]!;
  const changed: Record<string, string | undefined> = { ...before, [family]: other[family] };
  if (changed[family] === undefined) delete changed[family];
  return changed as Grants;
}
