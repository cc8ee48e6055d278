// Completes package-lock.json with rollup's platform binaries that the registry mirror of this
// project's machines does not serve (it carries only the linux glibc builds).
//
// Why: `npm install` against such a mirror drops the optional packages it cannot fetch from the lock
// file, and `npm ci` then refuses the lock ("Missing: @rollup/rollup-darwin-x64@ from lock file").
// A lock written against the public registry lists every platform package with its os/cpu/libc, and
// `npm ci` skips the ones that do not match the machine without fetching them. This script writes
// those entries back, deriving os/cpu/libc from the package name exactly as rollup publishes them.
//
// Run after any `npm install` that rewrites the lock:  node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from "node:fs";

const lockPath = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(lockPath, "utf8"));
const packages = lock.packages;

const OS = ["android", "darwin", "freebsd", "linux", "openbsd", "openharmony", "win32"];
const CPU = { "arm-eabi": "arm", "arm-gnueabihf": "arm", "arm-musleabihf": "arm" };

/** @param {string} name e.g. "@rollup/rollup-linux-arm-musleabihf" */
function platformOf(name) {
  const rest = name.replace(/^@rollup\/rollup-/, "");
  const os = OS.find((candidate) => rest.startsWith(`${candidate}-`));
  if (!os) throw new Error(`complete-lockfile: cannot read the platform of ${name}`);
  const tail = rest.slice(os.length + 1); // "arm64-musl", "x64", "arm-gnueabihf", ...
  const cpu = CPU[tail] ?? tail.split("-")[0];
  const entry = { os: [os], cpu: [cpu] };
  if (os === "linux") entry.libc = [/musl/.test(tail) ? "musl" : "glibc"];
  return entry;
}

let added = 0;
for (const [path, pkg] of Object.entries(packages)) {
  if (!path.endsWith("node_modules/rollup")) continue;
  const dev = pkg.dev === true;
  for (const [dependency, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const at = `${path.slice(0, -"rollup".length)}${dependency}`;
    if (packages[at]) continue;
    const { os, cpu, libc } = platformOf(dependency);
    packages[at] = {
      version,
      cpu,
      ...(dev ? { dev: true } : {}),
      ...(libc ? { libc } : {}),
      license: "MIT",
      optional: true,
      os,
    };
    added += 1;
  }
}

// Keep npm's own ordering (sorted by path) so the diff stays readable.
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b, "en"))),
);
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: ${added} platform entr${added === 1 ? "y" : "ies"} added`);
