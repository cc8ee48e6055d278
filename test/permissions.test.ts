/**
 * The permission model's small functions (src/permissions.ts), over every combination of levels:
 * `isReadOnly` names the six families one by one and `heldPermissions` reads its strings from a
 * table, so each is held here to the rule written over `FAMILIES` (a family added to the list but
 * not to them fails here).
 */
import { describe, expect, it } from "vitest";
import { FAMILIES, LEVELS, heldPermissions, isReadOnly, type Effective } from "../src/permissions.js";

/** Every assignment of a level to each family: 3^6 of them. */
function everyLevels(): Effective[] {
  let all: Record<string, string>[] = [{}];
  for (const family of FAMILIES) all = all.flatMap((partial) => LEVELS.map((level) => ({ ...partial, [family]: level })));
  return all as unknown as Effective[];
}

describe("levels after the role cap (spec §5)", () => {
  it("spec §5.7: read-only means holding write in no family, for every combination of levels", () => {
    const all = everyLevels();
    expect(all).toHaveLength(3 ** FAMILIES.length);
    for (const levels of all) expect(isReadOnly(levels)).toBe(!FAMILIES.some((f) => levels[f] === "write"));
  });

  it("spec §7: what a credential holds is each family it holds at read or write, as `<family>: <level>`, in the spec's order", () => {
    for (const levels of everyLevels()) {
      expect(heldPermissions(levels)).toEqual(FAMILIES.filter((f) => levels[f] !== "none").map((f) => `${f}: ${levels[f]}`));
    }
  });
});
