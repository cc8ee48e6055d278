/**
 * The permission model's small functions (src/permissions.ts), over every combination of levels:
 * `isReadOnly` names the six families one by one and `heldPermissions` reads its strings from a
 * table, so each is held here to the rule written over `FAMILIES` (a family added to the list but
 * not to them fails here).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { effectiveCode, effectiveLevels, FAMILIES, grantedLevel, heldPermissions, isReadOnly, lesser, LEVELS, levelsCode, type Effective } from "../src/permissions.js";
import type { Grants } from "../src/types.js";
import { heldPhrase } from "../src/messages.js";

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

describe("effective levels read the grants by value first (spec §5.4)", () => {
  /** The rule as written: per family, the own grant (`grantedLevel`), capped by the role. */
  const byRule = (grants: Grants, cap: Effective): Effective =>
    Object.fromEntries(FAMILIES.map((f) => [f, lesser(grantedLevel(grants, f), cap[f])])) as unknown as Effective;
  const arbLevelish = fc.oneof(fc.constantFrom("none", "read", "write", "READ", "", "write "), fc.anything());
  /** Grants of any shape: own values of any type, inherited ones, non-enumerable ones, a null prototype. */
  const arbGrants = fc
    .record({
      own: fc.dictionary(fc.constantFrom(...FAMILIES, "other", "__proto__"), arbLevelish),
      inherited: fc.dictionary(fc.constantFrom(...FAMILIES), fc.constantFrom("read", "write")),
      hidden: fc.dictionary(fc.constantFrom(...FAMILIES), fc.constantFrom("read", "write")),
      nullProto: fc.boolean(),
    })
    .map(({ own, inherited, hidden, nullProto }) => {
      const grants = Object.create(nullProto ? null : inherited) as Record<string, unknown>;
      for (const [k, v] of Object.entries(own)) Object.defineProperty(grants, k, { value: v, enumerable: true, writable: true, configurable: true });
      for (const [k, v] of Object.entries(hidden)) if (!Object.hasOwn(grants, k)) Object.defineProperty(grants, k, { value: v, enumerable: false });
      return grants as Grants;
    });
  const arbCap = fc.tuple(...FAMILIES.map(() => fc.constantFrom(...LEVELS))).map((levels) => Object.fromEntries(FAMILIES.map((f, i) => [f, levels[i]])) as unknown as Effective);

  it("spec §5.4: effective levels equal the rule (own grant, then the cap) for grants of any shape: inherited grants are none, non-enumerable own ones count", () => {
    fc.assert(
      fc.property(arbGrants, arbCap, (grants, cap) => {
        expect(effectiveLevels(grants, cap)).toEqual(byRule(grants, cap));
      }),
      { numRuns: 2000 },
    );
  });

  it("effectiveCode is the effective levels as one number: equal codes, equal levels (plan.ts keeps plans by it)", () => {
    const byCode = new Map<number, string>();
    fc.assert(
      fc.property(arbGrants, arbCap, (grants, cap) => {
        const levels = effectiveLevels(grants, cap);
        const code = effectiveCode(grants, cap);
        expect(code).toBe(levelsCode(levels));
        const shown = JSON.stringify(levels);
        expect(byCode.get(code) ?? shown).toBe(shown);
        byCode.set(code, shown);
      }),
      { numRuns: 2000 },
    );
    expect(effectiveCode(undefined, everyLevels()[100]!)).toBe(0);
  });

  it("no grants grant nothing", () => {
    for (const cap of everyLevels()) expect(Object.values(effectiveLevels(undefined, cap)).every((l) => l === "none")).toBe(true);
  });
});

describe("the held phrase of a 403 message (spec §7)", () => {
  it("spec §7: the held phrase is the held permissions joined by commas, or nothing, for every combination of levels (one family is its own phrase)", () => {
    for (const levels of everyLevels()) {
      const held = heldPermissions(levels);
      expect(heldPhrase(held)).toBe(held.length === 0 ? "nothing" : held.join(", "));
    }
  });
});
