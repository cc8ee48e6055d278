import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { permissionTable } from "../scripts/permission-table.js";

describe("docs cannot drift from the code", () => {
  it("docs/permissions.md is the table generated from the catalogue (run npm run docs:permissions)", () => {
    expect(readFileSync(new URL("../docs/permissions.md", import.meta.url), "utf8")).toBe(permissionTable(undefined, { docs: true }));
  });

  it("docs/guarantees.md names only properties that exist: every file › title row is a test in test/properties", () => {
    const doc = readFileSync(new URL("../docs/guarantees.md", import.meta.url), "utf8");
    const rows = [...doc.matchAll(/`([\w-]+\.test\.ts)` › ([^|]+)\|/g)];
    expect(rows.length).toBeGreaterThanOrEqual(30);
    for (const [, file, cell] of rows) {
      const source = readFileSync(new URL(`./properties/${file}`, import.meta.url), "utf8");
      // a cell may name several tests (";") and abbreviate a long title with "…"
      if (source.includes(`it("${cell!.trim()}"`)) continue; // a title that itself holds "…"
      for (const part of cell!.split("…")) {
        const title = part.replace(/^\s*;\s*/, "").trim();
        if (title === "") continue;
        expect(source.includes(`it("${title}`), `${file} › ${title}`).toBe(true);
      }
    }
  });

  it("the README shows the two commands", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain("npm install && npm run demo");
    expect(readme).toContain("npm test");
  });
});
