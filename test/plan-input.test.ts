/**
 * The `limit` query parameter's rule (spec §8 constants, DESIGN §10): one positive whole number a
 * JS integer holds exactly. `isLimit` reads it by hand; the regular expression is its specification.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isLimit } from "../src/plan.js";

const RULE = /^0*[1-9][0-9]{0,14}$/;

describe("limit: one positive whole number (spec §8)", () => {
  it("spec §4 `limit` (an integer page size; DESIGN §10: one positive whole number): isLimit agrees with /^0*[1-9][0-9]{0,14}$/ on any text, digits-heavy or not", () => {
    const digitsHeavy = fc.stringMatching(/^[0-9 +\-.e\n]{0,20}$/);
    fc.assert(
      fc.property(fc.oneof(digitsHeavy, fc.string({ maxLength: 20 }), fc.string({ unit: "binary", maxLength: 8 })), (text) => {
        expect(isLimit(text)).toBe(RULE.test(text));
      }),
      { seed: 20261125, numRuns: 5000 },
    );
  });

  it("anything but text is not a limit (the regular expression read it as text; the function is exported)", () => {
    for (const value of [123, {}, [], null, undefined, 1n, ["1"]]) expect(isLimit(value)).toBe(false);
  });

  it.each([
    ["1", true],
    ["100", true],
    ["000100", true],
    ["999999999999999", true],
    ["1000000000000000", false],
    ["0", false],
    ["000", false],
    ["", false],
    ["-1", false],
    ["1.5", false],
    ["1e3", false],
    [" 1", false],
    ["1\n", false],
    ["１", false],
  ])("%j → %s", (text, want) => {
    expect(isLimit(text)).toBe(want);
    expect(RULE.test(text)).toBe(want);
  });
});
