#!/usr/bin/env node
// Top self-time functions of a V8 CPU profile (`node --cpu-prof` writes *.cpuprofile JSON).
//
//   node bench/profile-top.mjs <file.cpuprofile> [count=10]
//
// Self time of a node = its sample count × the sampling interval; nodes are summed by
// function name + url + line (one function reached from many call paths is one row). Shares are of all
// samples, idle/GC/program included ("(garbage collector)" is V8's GC; "(program)" native code outside JS).
import { readFileSync } from "node:fs";
import { basename } from "node:path";

const [file, countArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/profile-top.mjs <file.cpuprofile> [count=10]");
  process.exit(2);
}
const count = Number(countArg ?? 10);
const profile = JSON.parse(readFileSync(file, "utf8"));

// samples[i] is the id of the node on top of the stack at sample i; timeDeltas[i] the µs before it.
const selfUs = new Map();
const { samples, timeDeltas } = profile;
for (let i = 0; i < samples.length; i++) selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + (timeDeltas[i] ?? 0));

// A bundle made by esbuild/tsup marks each module with a "// path/to/module.ts" comment line: name
// the source module of a bundled function by the nearest such line above it.
const modulesOf = new Map();
function moduleAt(url, line) {
  if (!url.startsWith("file://") || url.includes("/node_modules/")) return undefined;
  if (!modulesOf.has(url)) {
    let marks = [];
    try {
      readFileSync(new URL(url), "utf8").split("\n").forEach((text, i) => {
        const m = /^\/\/ ((?:src|bench|node_modules)\/\S+\.[cm]?[jt]s)$/.exec(text);
        if (m) marks.push([i, m[1]]);
      });
    } catch {
      marks = [];
    }
    modulesOf.set(url, marks);
  }
  let found;
  for (const [i, name] of modulesOf.get(url)) if (i <= line) found = name;
  return found;
}

const rows = new Map();
const byModule = new Map();
let total = 0;
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  total += us;
  if (us === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const module = moduleAt(url, lineNumber);
  const where = module ? module : url ? `${url.replace(/^file:\/\//, "").replace(/^.*\/node_modules\//, "node_modules/").replace(/^.*\/(\.bench|src|bench)\//, "$1/")}:${lineNumber + 1}` : "";
  const key = `${functionName || "(anonymous)"}\t${where}`;
  rows.set(key, (rows.get(key) ?? 0) + us);
  const mod = where ? where.replace(/:\d+$/, "").replace(/^(node_modules\/(?:@[^/]+\/)?[^/]+)\/.*$/, "$1") : functionName;
  byModule.set(mod, (byModule.get(mod) ?? 0) + us);
}

const top = [...rows].sort((a, b) => b[1] - a[1]).slice(0, count);
console.log(`${basename(file)}: ${(total / 1e3).toFixed(0)} ms sampled; top ${top.length} by self time`);
for (const [key, us] of top) {
  const [name, where] = key.split("\t");
  console.log(`${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1e3).toFixed(0).padStart(6)} ms  ${name}  ${where}`);
}

console.log(`by module (self time):`);
for (const [mod, us] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${((100 * us) / total).toFixed(1).padStart(5)} %  ${mod}`);
