/**
 * `npm run bench:instructions`: the library's own work per decision counted in CPU instructions,
 * not timed (issue 10): on a shared machine timings move from one hour to the next, an instruction
 * count stays within ~1–2 % from run to run, whatever else the machine is doing. So a change to the
 * hot path is judged by it, a build against another (`BENCH_BASE=<commit>`: that commit is built in
 * a worktree beside it, with this checkout's node_modules).
 *
 * Builds the library into one ESM bundle (tsup, as the race does), then runs each driver under
 * `valgrind --tool=cachegrind --cache-sim=no node --single-threaded` twice, at LO and HI calls
 * (default 100 000 and 300 000; 40 000 and 120 000 for evaluate), and prints
 * (I refs at HI − I refs at LO) ÷ (HI − LO): the steady state, the JIT's warm-up and the start-up
 * left out; with BENCH_REPEAT=n, the median of n such differences (a single one was once ~6 % off
 * the four others of the same build). Drivers (bench/instructions/): `check.mjs`, policy.check of an allowed audience read
 * over MemoryStore with 1 000 credentials rotating; `evaluate.mjs`, evaluate of an allowed audience
 * read with N credentials in the snapshot (N = 1 and 1 000).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const out = join(root, ".bench", "instructions");

function build(from, into) {
  execFileSync("npx", ["tsup", "src/index.ts", "--no-config", "--format", "esm", "--platform", "node", "--target", "node20", "--external", "immer", "--silent", "--out-dir", into], { cwd: from, stdio: "inherit" });
}

/** I refs of `node --single-threaded driver` at `iterations` calls, under cachegrind. */
function refs(driver, lib, iterations, env) {
  const result = spawnSync("valgrind", ["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", "node", "--single-threaded", driver], {
    cwd: root,
    env: { ...process.env, ...env, LIB: lib, ITER: String(iterations) },
    encoding: "utf8",
  });
  const line = /I\s+refs:\s+([\d,]+)/.exec(result.stderr ?? "");
  if (result.status !== 0 || line === null) throw new Error(`${driver} under valgrind failed (is valgrind installed?): ${result.stderr}`);
  return Number(line[1].replaceAll(",", ""));
}

/** Instructions per call in the steady state: the difference of two runs, per call between them; the median of BENCH_REPEAT such (one run in five was ~6 % off). */
function perCall(driver, lib, lo, hi, env) {
  const counts = [];
  for (let i = 0; i < REPEAT; i++) counts.push(Math.round((refs(driver, lib, hi, env) - refs(driver, lib, lo, env)) / (hi - lo)));
  counts.sort((a, b) => a - b);
  return counts[(counts.length - 1) >> 1];
}

const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 1));

const builds = [["this checkout", join(out, "lib")]];
mkdirSync(out, { recursive: true });
build(root, join(out, "lib"));
const base = process.env.BENCH_BASE;
if (base !== undefined) {
  const tree = join(out, "base-tree");
  rmSync(tree, { recursive: true, force: true });
  execFileSync("git", ["worktree", "add", "--force", "--detach", tree, base], { cwd: root, stdio: "ignore" });
  if (!existsSync(join(tree, "node_modules"))) symlinkSync(join(root, "node_modules"), join(tree, "node_modules"));
  build(tree, join(out, "base"));
  execFileSync("git", ["worktree", "remove", "--force", tree], { cwd: root, stdio: "ignore" });
  builds.push([`base ${base}`, join(out, "base")]);
}

const rows = [
  ["policy.check, 1 000 credentials", "bench/instructions/check.mjs", 100_000, 300_000, {}],
  ["evaluate, 1 credential", "bench/instructions/evaluate.mjs", 40_000, 120_000, { N: "1" }],
  ["evaluate, 1 000 credentials", "bench/instructions/evaluate.mjs", 40_000, 120_000, { N: "1000" }],
];
console.log(`instructions per call, (I refs at HI − at LO) ÷ (HI − LO), cachegrind${REPEAT > 1 ? `, median of ${REPEAT}` : ""}\n`);
console.log(["row", ...builds.map(([name]) => name)].join(" | "));
for (const [name, driver, lo, hi, env] of rows) {
  const cells = builds.map(([, lib]) => String(perCall(driver, lib, lo, hi, env)));
  console.log([name, ...cells].join(" | "));
}
