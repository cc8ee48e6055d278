/**
 * Generates docs/permissions.md from the operation catalogue, so the table cannot drift from the
 * code: `npm run docs:permissions` writes it, and test/docs.test.ts fails when it is stale. The
 * generator lives in src/cli/permission-table.ts, shared with `npx newsletter-policy permissions`.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { permissionTable } from "../src/cli/permission-table.js";

export { permissionTable };

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("../docs/permissions.md", import.meta.url), permissionTable(undefined, { docs: true }));
  console.log("wrote docs/permissions.md");
}
