#!/usr/bin/env node
// `node bench/v8-copies.mjs`: what V8 charges to copy the snapshot's pieces (why its levels are arrays
// and its leaves key/record pairs, docs/decisions.md). ns per copy of 16 slots (or a leaf of 12 or 16
// records), each copy then changed in one slot; the numbers are this machine's, the ratios the point.
const N = 2e6;
function bench(name, f) {
  let out;
  const t = performance.now();
  for (let i = 0; i < N; i++) out = f(i);
  console.log(`${name.padEnd(44)} ${(((performance.now() - t) * 1e6) / N).toFixed(0).padStart(6)} ns`);
  return out;
}
const v = { y: 1 };
const frozenObject = Object.freeze(Object.fromEntries(Array.from({ length: 16 }, (_, i) => [String(i), { x: i }])));
const frozenArray = Object.freeze(Array.from({ length: 16 }, (_, i) => ({ x: i })));
const record = () => Object.freeze({ start: 1, count: 2, expiresAt: 3 });
const leafObject = Object.freeze(Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`b:12.k.key_${i}:general`, record()])));
const leafPairs = Object.freeze(Array.from({ length: 16 }, (_, i) => [`b:12.k.key_${i}:general`, record()]).flat());
for (let round = 1; round <= 2; round++) {
  console.log(`round ${round}`);
  bench('level: spread a frozen object keyed "0".."15"', (i) => Object.freeze({ ...frozenObject, [String(i & 15)]: v }));
  bench("level: slice a frozen array of 16", (i) => {
    const n = frozenArray.slice();
    n[i & 15] = v;
    return Object.freeze(n);
  });
  bench("level: copy a frozen array of 16 in a loop", (i) => {
    const n = new Array(16);
    for (let j = 0; j < 16; j++) n[j] = frozenArray[j];
    n[i & 15] = v;
    return Object.freeze(n);
  });
  bench("leaf: rebuild an object of 16 records (for-in)", () => {
    const out = {};
    for (const key in leafObject) if (Object.hasOwn(leafObject, key)) out[key] = leafObject[key];
    return Object.freeze(out);
  });
  bench("leaf: rebuild 16 records as pairs (loop)", () => {
    const out = [];
    for (let j = 0; j < leafPairs.length; j += 2) out.push(leafPairs[j], leafPairs[j + 1]);
    return Object.freeze(out);
  });
}
