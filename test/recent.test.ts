/**
 * `Recent`, the bounded cache of the subject and budget keys a check builds (src/recent.ts): keys
 * that come back are found; under a rotation of more keys than it holds it stops admitting for a
 * while instead of keeping, until its next clear, values built for one use.
 */
import { describe, expect, it } from "vitest";
import { Recent } from "../src/recent.js";

/** A miss, as store-keys.ts handles one: kept when admitted. */
function add<V>(cache: Recent<V>, key: string, value: V): void {
  if (cache.admit()) cache.set(key, value);
}

describe("Recent (the key caches of policy.check)", () => {
  it("finds keys that come back: 1 000 keys in rotation, room for 4 096 → every lookup after the first round hits", () => {
    const cache = new Recent<number>(4_096);
    let hits = 0;
    for (let i = 0; i < 10_000; i++) {
      const key = `k${i % 1_000}`;
      if (cache.get(key) === i % 1_000) hits++;
      else add(cache, key, i % 1_000);
    }
    expect(hits).toBe(9_000);
    expect(cache.size).toBe(1_000);
  });

  it("under a rotation of more keys than it holds, a fill without hits makes it sit out 8 fills' worth of misses, then it admits again", () => {
    const cache = new Recent<number>(100);
    let n = 0;
    const miss = () => {
      const key = `u${n++}`; // never seen again
      expect(cache.get(key)).toBeUndefined();
      add(cache, key, n);
    };
    for (let i = 0; i < 100; i++) miss();
    expect(cache.size).toBe(100); // full: the next admission finds it full of keys that never came back
    miss();
    expect(cache.size).toBe(0);
    for (let i = 0; i < 799; i++) miss();
    expect(cache.size, "nothing admitted while sitting out").toBe(0);
    miss(); // the 800th unadmitted miss ends the sitting out
    expect(cache.size).toBe(0);
    miss();
    expect(cache.size, "admitting again").toBe(1);
  });

  it("a fill with as many hits as entries is cleared and goes on admitting (a working set larger than the cache but coming back)", () => {
    const cache = new Recent<string>(10);
    for (let i = 0; i < 10; i++) add(cache, `a${i}`, "x");
    for (let i = 0; i < 10; i++) expect(cache.get(`a${i}`)).toBe("x");
    add(cache, "b", "y"); // full, 10 hits since the clear (as many as entries): cleared, and "b" admitted
    expect(cache.size).toBe(1);
    expect(cache.get("b")).toBe("y");
  });
});
