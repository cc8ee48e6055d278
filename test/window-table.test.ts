import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WindowTable } from "../src/window-table.js";

describe("WindowTable (MemoryStore's budget windows)", () => {
  it("reads back what was written, and says when a window is new or its end moved", () => {
    const t = new WindowTable();
    expect(t.get("a")).toBeUndefined();
    expect(t.set("a", 1000.5, 1, 61000.5)).toBe(true);
    expect(t.set("a", 1000.5, 2, 61000.5)).toBe(false);
    expect(t.set("b", 5, 1, 65)).toBe(true);
    expect(t.get("a")).toEqual({ start: 1000.5, count: 2, expiresAt: 61000.5 });
    expect(t.expiresAt("b")).toBe(65);
    expect(t.set("b", 70, 1, 130)).toBe(true);
    expect(t.size).toBe(2);
    t.delete("a");
    expect(t.get("a")).toBeUndefined();
    expect(t.get("b")).toEqual({ start: 70, count: 1, expiresAt: 130 });
    expect(t.size).toBe(1);
  });

  it("keeps every key's own window across many pages, slots reused after a delete", () => {
    const t = new WindowTable();
    const n = 10_000; // more than two pages
    for (let i = 0; i < n; i++) t.set(`k${i}`, i, i + 1, i + 60);
    for (let i = 0; i < n; i += 2) t.delete(`k${i}`);
    for (let i = 0; i < n; i += 2) t.set(`n${i}`, -i, 7, -i + 60);
    for (let i = 0; i < n; i++) {
      if (i % 2 === 1) expect(t.get(`k${i}`)).toEqual({ start: i, count: i + 1, expiresAt: i + 60 });
      else expect(t.get(`k${i}`)).toBeUndefined();
    }
    for (let i = 0; i < n; i += 2) expect(t.get(`n${i}`)).toEqual({ start: -i, count: 7, expiresAt: -i + 60 });
    expect(t.size).toBe(n);
  });

  it("gives a page back once all its windows are forgotten, and can fill it again", () => {
    const t = new WindowTable();
    const n = 3 * 4096;
    for (let i = 0; i < n; i++) t.set(`k${i}`, i, 1, i + 60);
    for (let i = 0; i < 4096; i++) t.delete(`k${i}`); // the first page, all of it
    const pages = (t as unknown as { pages: unknown[] }).pages;
    expect(pages[0]).toBeUndefined();
    for (let i = 0; i < 4096; i++) t.set(`m${i}`, i, 2, i + 60);
    expect(pages[0]).toBeDefined();
    for (let i = 0; i < 4096; i++) expect(t.get(`m${i}`)).toEqual({ start: i, count: 2, expiresAt: i + 60 });
    for (let i = 4096; i < n; i++) expect(t.get(`k${i}`)?.start).toBe(i);
  });

  it("answers as a Map would under any mix of reads, writes and deletes over a few keys (the two recently used slots it remembers never go stale when a slot is reused; property)", () => {
    const op = fc.tuple(fc.constantFrom("get", "read", "set", "delete", "expiresAt"), fc.constantFrom("a", "b", "c", "d"), fc.integer({ min: 0, max: 1_000 }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const t = new WindowTable();
        const model = new Map<string, { start: number; count: number; expiresAt: number }>();
        for (const [name, key, n] of ops) {
          if (name === "set") {
            const fresh = !model.has(key) || model.get(key)!.expiresAt !== n + 60;
            expect(t.set(key, n, n + 1, n + 60)).toBe(fresh);
            model.set(key, { start: n, count: n + 1, expiresAt: n + 60 });
          } else if (name === "delete") {
            t.delete(key);
            model.delete(key);
          } else if (name === "get") expect(t.get(key)).toEqual(model.get(key));
          else if (name === "read") {
            // read writes into the caller's record (MemoryStore's scratch): stale fields never show through
            const into = { start: -1, count: -1, expiresAt: -1 };
            const got = t.read(key, into);
            expect(got === undefined ? undefined : { ...got }).toEqual(model.get(key));
            if (got !== undefined) expect(got).toBe(into);
          } else expect(t.expiresAt(key)).toBe(model.get(key)?.expiresAt);
        }
        for (const key of ["a", "b", "c", "d"]) expect(t.get(key)).toEqual(model.get(key));
        expect(t.size).toBe(model.size);
      }),
      { seed: 20261123, numRuns: 500 },
    );
  });
});
