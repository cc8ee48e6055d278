/**
 * Builds docs/playground/playground.js from docs/playground/playground.ts and the built core entry
 * (dist/index.js, so run `npm run build` first; `npm run build:playground` does both).
 * Usage: node scripts/build-playground.mjs [outfile]
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const outfile = process.argv[2] ?? `${root}docs/playground/playground.js`;
await build({
  entryPoints: [`${root}docs/playground/playground.ts`],
  bundle: true,
  // a classic script: module scripts do not load from file:// pages
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  outfile,
  logLevel: "warning",
});
console.log(`wrote ${outfile}`);
