import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { permissionTable } from "../scripts/permission-table.js";

describe("docs cannot drift from the code", () => {
  it("docs/permissions.md is the table generated from the catalogue (run npm run docs:permissions)", () => {
    expect(readFileSync(new URL("../docs/permissions.md", import.meta.url), "utf8")).toBe(permissionTable());
  });

  it("the README shows the two commands", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain("npm install && npm run demo");
    expect(readme).toContain("npm test");
  });
});
