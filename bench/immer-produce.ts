// What immer's `produce` costs per change of a snapshot's top level (docs/performance.md, third
// round): the recipe `evaluate` runs (it returns the new top level whole and frozen, every part
// already frozen: immer walks nothing), the recipe it ran before (the same top level unfrozen: immer
// walks and freezes it), assigning through the draft, and the top level frozen by hand.
// Run: npm run bench:immer
//
// The same five fields each time: seq, at, and the three kinds' bucket levels (frozen arrays of 16).
import { Immer } from "immer";
import { median } from "./stats.js";

const immer = new Immer({ autoFreeze: true });
const level = Object.freeze(Array.from({ length: 16 }, () => Object.freeze({})));
const next = Object.freeze(Array.from({ length: 16 }, () => Object.freeze({})));
type Top = { readonly seq: number; readonly at: number; readonly windows: unknown; readonly caps: unknown; readonly keys: unknown };
const start = (): Top => Object.freeze({ seq: 0, at: 1, windows: level, caps: level, keys: level });
const variants: Record<string, (b: Top) => Top> = {
  "produce, the recipe returns the new top level frozen (evaluate's)": (b) => immer.produce(b, (): Top => Object.freeze({ seq: b.seq + 1, at: 2, windows: next, caps: b.caps, keys: b.keys })),
  "produce, the recipe returns the new top level unfrozen": (b) => immer.produce(b, (): Top => ({ seq: b.seq + 1, at: 2, windows: next, caps: b.caps, keys: b.keys })),
  "produce, the recipe assigns through the draft": (b) => immer.produce(b, (d: { -readonly [K in keyof Top]: Top[K] }) => {
    d.seq = b.seq + 1;
    d.at = 2;
    d.windows = next;
  }),
  "Object.freeze of the new top level (no immer)": (b) => Object.freeze<Top>({ seq: b.seq + 1, at: 2, windows: next, caps: b.caps, keys: b.keys }),
};
const N = 300_000;
const results = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
for (let round = 0; round < 5; round++) {
  for (const [name, change] of Object.entries(variants)) {
    let b = start();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) b = change(b);
    results.get(name)!.push(Number(process.hrtime.bigint() - t0) / N);
  }
}
for (const [name, times] of results) console.log(`${median(times).toFixed(0).padStart(6)} ns per change (median of ${times.length} rounds)  ${name}`);
