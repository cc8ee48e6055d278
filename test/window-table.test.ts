import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WindowTable, WindowView } from "../src/window-table.js";

/** Page size in groups, and windows per group (src/window-table.ts). */
const PAGE = 2048;

describe("WindowTable (MemoryStore's budget windows, grouped per subject)", () => {
  it("reads back what was written, and says when a window is new or its end moved", () => {
    const t = new WindowTable();
    const general = t.idOf("general");
    const audience = t.idOf("audience");
    expect(t.idOf("general"), "a name keeps its id").toBe(general);
    expect(t.get("a", general)).toBeUndefined();
    expect(t.set("a", general, 1000.5, 1, 61000.5)).toBe(true);
    expect(t.set("a", general, 1000.5, 2, 61000.5)).toBe(false);
    expect(t.set("b", general, 5, 1, 65)).toBe(true);
    expect(t.get("a", general)).toEqual({ start: 1000.5, count: 2, expiresAt: 61000.5 });
    expect(t.get("a", audience), "another budget of the same subject is another window").toBeUndefined();
    expect(t.expiresAt("b", general)).toBe(65);
    expect(t.set("b", general, 70, 1, 130)).toBe(true);
    expect(t.size).toBe(2);
    t.delete("a", general);
    expect(t.get("a", general)).toBeUndefined();
    expect(t.get("b", general)).toEqual({ start: 70, count: 1, expiresAt: 130 });
    expect(t.size).toBe(1);
  });

  it("keeps more budgets of one subject than a group holds (a chain of groups), each its own window", () => {
    const t = new WindowTable();
    const ids = ["general", "audience", "write", "exports", "imports"].map((n) => t.idOf(n));
    ids.forEach((id, i) => t.set("s", id, i, i + 1, i + 60));
    ids.forEach((id, i) => expect(t.get("s", id)).toEqual({ start: i, count: i + 1, expiresAt: i + 60 }));
    t.delete("s", ids[0]!); // a hole in the first group: filled by the next new budget
    t.set("s", t.idOf("sixth"), 9, 9, 99);
    expect(t.get("s", t.idOf("sixth"))).toEqual({ start: 9, count: 9, expiresAt: 99 });
    expect(t.get("s", ids[0]!)).toBeUndefined();
    expect(t.size).toBe(5);
    for (const id of [...ids.slice(1), t.idOf("sixth")]) t.delete("s", id);
    expect(t.size).toBe(0);
    expect(t.get("s", ids[1]!)).toBeUndefined();
  });

  it("keeps every subject's own windows across many pages, groups reused after a delete", () => {
    const t = new WindowTable();
    const [g, a] = [t.idOf("general"), t.idOf("audience")];
    const n = 5_000; // more than two pages of groups
    for (let i = 0; i < n; i++) {
      t.set(`k${i}`, g, i, i + 1, i + 60);
      t.set(`k${i}`, a, -i, 1, 60);
    }
    for (let i = 0; i < n; i += 2) {
      t.delete(`k${i}`, g);
      t.delete(`k${i}`, a);
    }
    for (let i = 0; i < n; i += 2) t.set(`n${i}`, a, -i, 7, -i + 60);
    for (let i = 0; i < n; i++) {
      if (i % 2 === 1) expect(t.get(`k${i}`, g)).toEqual({ start: i, count: i + 1, expiresAt: i + 60 });
      else expect(t.get(`k${i}`, g)).toBeUndefined();
    }
    for (let i = 0; i < n; i += 2) expect(t.get(`n${i}`, a)).toEqual({ start: -i, count: 7, expiresAt: -i + 60 });
    expect(t.size).toBe(n + n / 2);
  });

  it("gives a page back once all its subjects' windows are forgotten, and can fill it again", () => {
    const t = new WindowTable();
    const g = t.idOf("general");
    const n = 3 * PAGE;
    for (let i = 0; i < n; i++) t.set(`k${i}`, g, i, 1, i + 60);
    for (let i = 0; i < PAGE; i++) t.delete(`k${i}`, g); // the first page, all of it
    const pages = (t as unknown as { pages: unknown[] }).pages;
    expect(pages[0]).toBeUndefined();
    for (let i = 0; i < PAGE; i++) t.set(`m${i}`, g, i, 2, i + 60);
    expect(pages[0]).toBeDefined();
    for (let i = 0; i < PAGE; i++) expect(t.get(`m${i}`, g)).toEqual({ start: i, count: 2, expiresAt: i + 60 });
    for (let i = PAGE; i < n; i++) expect(t.get(`k${i}`, g)?.start).toBe(i);
  });

  it("one window at a time, set and forgotten 10 000 times (the current page's last group freed each time): one page held, its slot reused (a mutant leaking that slot held 5 pages; found by a mutation review)", () => {
    const t = new WindowTable();
    const g = t.idOf("general");
    for (let i = 0; i < 10_000; i++) {
      t.set(`s${i}`, g, 0, 1, 60_000);
      t.delete(`s${i}`, g);
    }
    expect(t.size).toBe(0);
    const pages = (t as unknown as { pages: unknown[] }).pages;
    expect(pages.filter((page) => page !== undefined).length).toBeLessThanOrEqual(1);
  });

  it("answers as a Map of (subject, budget) would under any mix of reads, writes and deletes (chains grow and shrink, groups are reused, the subject it remembers never goes stale; property)", () => {
    const op = fc.tuple(
      fc.constantFrom("get", "read", "set", "delete", "expiresAt", "update"),
      fc.constantFrom("a", "b", "c"),
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 0, max: 1_000 }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const t = new WindowTable();
        // when a window and the other one kept beside it have both ended
        type Other = { start: number; count: number; expiresAt: number };
        const forget = (w: { expiresAt: number; other?: Other }) => (w.other !== undefined ? Math.max(w.expiresAt, w.other.expiresAt) : w.expiresAt);
        const model = new Map<string, { start: number; count: number; expiresAt: number; other?: Other }>();
        for (const [name, subject, id, n] of ops) {
          const key = `${subject}/${id}`;
          if (name === "set") {
            // an existing window's other one stays as it was; a new window has none
            const was = model.get(key);
            const next = { start: n, count: n + 1, expiresAt: n + 60, ...(was?.other && { other: was.other }) };
            // true when it is new or its end moved (the store then reads the time both end by)
            expect(t.set(subject, id, n, n + 1, n + 60)).toBe(was === undefined || was.expiresAt !== next.expiresAt);
            model.set(key, next);
          } else if (name === "update") {
            // a place from locate, written in place (MemoryStore writes a window it has just read this way)
            const place = t.locate(subject, id);
            expect(place >= 0).toBe(model.has(key));
            if (place >= 0) {
              // with the other window kept beside it: its three numbers are read back as written
              // the other one ending before this one, or after it (a window kept beside it ahead)
              const otherEnd = n + (n % 3) * 50;
              const next = { start: n, count: n + 2, expiresAt: n + 61, ...(n % 4 > 0 && { other: { start: n - 60, count: n % 4, expiresAt: otherEnd } }) };
              expect(t.writePairAt(place, n, n + 2, n + 61, n - 60, n % 4, otherEnd)).toBe(forget(model.get(key)!) !== forget(next));
              model.set(key, next);
            }
          } else if (name === "delete") {
            t.delete(subject, id);
            model.delete(key);
          } else if (name === "get") expect(t.get(subject, id)).toEqual(model.get(key));
          else if (name === "read") {
            // readAt writes into the caller's record (MemoryStore's scratch): stale fields never show through
            const into = new WindowView();
            into.start = into.count = into.expiresAt = -1;
            const place = t.locate(subject, id);
            const got = place < 0 ? undefined : t.readAt(place, into);
            expect(got === undefined ? undefined : { start: got.start, count: got.count, expiresAt: got.expiresAt, ...(got.other && { other: got.other }) }).toEqual(model.get(key));
            if (got !== undefined) expect(got).toBe(into);
          } else expect(t.expiresAt(subject, id)).toBe(model.has(key) ? forget(model.get(key)!) : undefined);
        }
        for (const subject of ["a", "b", "c"]) for (let id = 1; id <= 5; id++) expect(t.get(subject, id)).toEqual(model.get(`${subject}/${id}`));
        expect(t.size).toBe(model.size);
        // a subject with no window left holds no group
        const heads = (t as unknown as { heads: { size: number } }).heads;
        expect(heads.size).toBe(new Set([...model.keys()].map((k) => k.split("/")[0])).size);
      }),
      { seed: 20261125, numRuns: 500 },
    );
  });
});
