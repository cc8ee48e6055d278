/**
 * A snapshot restored from JSON that was changed after it was stored is a host mistake (DESIGN §10):
 * `evaluate`, `release` and `prune` throw PolicyConfigError naming `usage`, never admit past a budget
 * or a cap, and never throw anything else. Found by a black-box review: `"count": -1000` (or
 * `"x"`) admitted past a budget without end, and a `null` record, a cap day whose members are not a
 * list, a leaf of an odd length or a bucket nested 100 000 deep threw TypeError or RangeError.
 * Also: a snapshot handed back unchanged is frozen (it came back as the host's unfrozen object), and
 * `release` checks its inputs as `evaluate` does.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate, PolicyConfigError, prune, release, reset, type Decision, type PolicyOptions, type Usage } from "../src/index.js";
import { T0, key, unfrozenPath } from "./fixtures.js";

const config: PolicyOptions = { docsUrl: "https://docs.example/errors", budgets: { general: { limit: 5, window: 60 } }, caps: { dispatch: { limit: 2 } } };
const credential = key({ nl_1: { sending: "write", audience: "read" } }, true);
const roles = { nl_1: "owner" };
const me = { method: "GET", path: "/me" };
const send = (i: number) => ({ method: "POST", path: `/articles/a_${i}/send`, newsletter: "nl_1", idempotencyKey: `k${i}` });

function step(request: object, usage: Usage, now = T0 + 1): { decision: Decision; usage: Usage } {
  return evaluate(request as never, { credential, roles, usage, now, config });
}

/** A snapshot with five GET /me charged (general spent) and two sends (the cap spent), as JSON. */
function spentJson(): string {
  let usage = emptyUsage();
  for (let i = 0; i < 2; i++) usage = step(send(i), usage).usage;
  for (let i = 0; i < 3; i++) usage = step(me, usage).usage;
  expect(step(me, usage).decision.status).toBe(429);
  return JSON.stringify(usage);
}

/** Every allowed decision of `n` requests over `usage`, or the error the first one threw. */
function admitted(request: object, usage: Usage, n: number): number | unknown {
  let allowed = 0;
  try {
    for (let i = 0; i < n; i++) {
      const next = step(request, usage);
      if (next.decision.allowed) allowed++;
      usage = next.usage;
    }
  } catch (error) {
    return error;
  }
  return allowed;
}

describe("DESIGN §10: a tampered snapshot is a PolicyConfigError naming usage, never a budget or cap passed", () => {
  const json = spentJson();
  const tampered = (from: RegExp | string, to: string): Usage => JSON.parse(json.replace(from, to)) as Usage;

  it.each([
    ["a negative count", /"count":5/, '"count":-1000'],
    ["a count as text", /"count":5/, '"count":"x"'],
    ["a fractional count", /"count":5/, '"count":4.5'],
    ["a window that is null", /\{"start":[^}]*"count":5[^}]*\}/, "null"],
    ["a start as text", /"start":\d+/, '"start":"then"'],
  ])("%s: every GET /me answers PolicyConfigError naming usage, none is admitted", (_name, from, to) => {
    const usage = tampered(from, to);
    expect(JSON.stringify(usage)).not.toBe(json);
    const result = admitted(me, usage, 50);
    // a record GET /me does not read (another budget's window) leaves its answers as they were: none admitted
    if (result !== 0) {
      expect(result).toBeInstanceOf(PolicyConfigError);
      expect((result as PolicyConfigError).field).toBe("usage");
    }
  });

  it.each([
    ["the window's key set to null", /"b:[^"]*:general"/, "null"],
    ["the window's key set to a number", /"b:[^"]*:general"/, "42"],
    ["the window's key set to an object", /"b:[^"]*:general"/, "{}"],
    ["the window's key cut out (the pairs after it shifted)", /"b:[^"]*:general",/, ""],
  ])("%s: GET /me answers PolicyConfigError naming usage, never room in the spent budget (found by a tamper drill: each answered 200)", (_name, from, to) => {
    const usage = tampered(from, to);
    expect(JSON.stringify(usage)).not.toBe(json);
    const result = admitted(me, usage, 5);
    expect(result).toBeInstanceOf(PolicyConfigError);
    expect((result as PolicyConfigError).field).toBe("usage");
  });

  it.each([
    ["its count negative", /"other":\{"start":(\d+),"count":5/, '"other":{"start":$1,"count":-1000'],
    ["its count as text", /"other":\{"start":(\d+),"count":5/, '"other":{"start":$1,"count":"x"'],
    ["its end cut out", /,"expiresAt":(\d+)\}\}/, "}}"],
    ["it as a number", /"other":\{[^}]*\}/, '"other":7'],
    ["it as null", /"other":\{[^}]*\}/, '"other":null'],
  ])("spec §8 budgets, the other window kept beside a budget's (a spent window, then one read a day ahead) with %s: a read stamped back into it answers PolicyConfigError naming usage, never room", (_name, from, to) => {
    // five GET /me spend general at T0 + 1; one a day ahead opens a window, the spent one kept beside it
    let usage = emptyUsage();
    for (let i = 0; i < 5; i++) usage = step(me, usage).usage;
    usage = step(me, usage, T0 + 86_400_000).usage;
    const before = JSON.stringify(usage);
    expect(before).toContain('"other":{');
    expect(step(me, usage, T0 + 2).decision.status).toBe(429);
    const changed = JSON.parse(before.replace(from, to)) as Usage;
    expect(JSON.stringify(changed)).not.toBe(before);
    let result: unknown;
    try {
      result = step(me, changed, T0 + 2).decision.status;
    } catch (error) {
      result = error;
    }
    expect(result).toBeInstanceOf(PolicyConfigError);
    expect((result as PolicyConfigError).field).toBe("usage");
  });

  it.each([
    ["members as an object", /"members":\[[^\]]*\]/, '"members":{}'],
    ["members that are null", /"members":\[[^\]]*\]/, '"members":null'],
    ["a resetAt as text", /"resetAt":\d+/, '"resetAt":"soon"'],
  ])("spec §8 daily cap, %s: a send answers PolicyConfigError naming usage, none is admitted past the cap", (_name, from, to) => {
    // two sends: the cap of 2 spent, general not
    let sent = emptyUsage();
    for (let i = 0; i < 2; i++) sent = step(send(i), sent).usage;
    const capsJson = JSON.stringify(sent);
    const usage = JSON.parse(capsJson.replace(from, to)) as Usage;
    expect(JSON.stringify(usage)).not.toBe(capsJson);
    const result = admitted(send(9), usage, 3);
    expect(result).toBeInstanceOf(PolicyConfigError);
  });

  it("a layout this version does not write, or kinds of another shape, are PolicyConfigError naming usage: never read as an empty snapshot (a spent budget and a spent cap answered 200; found by a black-box review)", () => {
    const parsed = JSON.parse(json) as Record<string, unknown>;
    // two sends: the cap of 2 spent, general not (a send past a spent general never reads the cap)
    let sent = emptyUsage();
    for (let i = 0; i < 2; i++) sent = step(send(i), sent).usage;
    const capsSpent = JSON.parse(JSON.stringify(sent)) as Record<string, unknown>;
    const sixteen = (slot: unknown): unknown[] => Array.from({ length: 16 }, () => slot);
    const cases: [string, Record<string, unknown>][] = [
      ["layout 99 (a newer version's)", { layout: 99 }],
      ['layout "2"', { layout: "2" }],
      ["layout null", { layout: null }],
      ["layout 1", { layout: 1 }],
      ["windows []", { windows: [] }],
      ["windows of 16 nulls", { windows: sixteen(null) }],
      ["windows of 16 numbers", { windows: sixteen(7) }],
      ["windows of 16 short levels", { windows: sixteen([]) }],
      ["windows of 16 levels of nulls", { windows: sixteen(sixteen(null)) }],
      ["caps []", { caps: [] }],
      ["caps of 16 nulls", { caps: sixteen(null) }],
      ["windows null", { windows: null }],
    ];
    for (const [name, change] of cases) {
      const usage = { ...("caps" in change ? capsSpent : parsed), ...change } as unknown as Usage;
      for (const request of "caps" in change ? [send(9)] : [me, send(9)]) {
        const thrown = admitted(request, usage, 1);
        expect(thrown, name).toBeInstanceOf(PolicyConfigError);
        expect((thrown as PolicyConfigError).field, name).toBe("usage");
      }
    }
    // the snapshot as stored is read; so is one whose layout a host's serializer dropped: its
    // windows are found where this version put them (it was read as none: a spent general answered
    // 200 with 59 remaining; found by a diff review)
    expect(step(me, JSON.parse(json) as Usage).decision.status).toBe(429);
    const { layout: _dropped, ...withoutLayout } = parsed;
    expect(step(me, withoutLayout as unknown as Usage).decision.status).toBe(429);
    expect(admitted(me, withoutLayout as unknown as Usage, 20)).toBe(0);
    // the pure reset meets the same shapes: PolicyConfigError, never a TypeError (found by a diff review)
    for (const change of [{ keys: sixteen(null) }, { windows: sixteen(7) }, { caps: sixteen(sixteen(null)) }]) {
      const usage = { ...parsed, ...change } as unknown as Usage;
      expect(() => reset(usage, { credential }, T0 + 1, config), JSON.stringify(change).slice(0, 40)).toThrow(PolicyConfigError);
    }
  });

  it("a leaf of an odd length, a bucket nested 100 000 deep, a seq as text: PolicyConfigError, never a TypeError or RangeError", () => {
    const parsed = JSON.parse(json) as { windows: unknown[]; seq: unknown };
    // a leaf of pairs with its last record cut off
    const odd = JSON.parse(json.replace(/("b:[^"]*",\{[^}]*\})\]/, '$1,"b:extra"]')) as Usage;
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep, ...Array.from({ length: 15 }, () => ({}))];
    const nested = { ...parsed, windows: Array.from({ length: 16 }, () => Array.from({ length: 16 }, () => deep)) } as unknown as Usage;
    const seq = { ...parsed, seq: "7" } as unknown as Usage;
    for (const usage of [odd, nested, seq]) {
      for (const run of [() => step(me, usage), () => prune(usage, T0 + 86_400_000 * 30), () => step(send(9), usage)]) {
        let thrown: unknown;
        try {
          run();
        } catch (error) {
          thrown = error;
        }
        if (thrown !== undefined) expect(thrown).toBeInstanceOf(PolicyConfigError);
      }
    }
    expect(() => step(me, seq)).toThrow(PolicyConfigError);
  });

  it("any value of the snapshot replaced by any JSON value: a decision within the budget, or PolicyConfigError (property)", () => {
    const base = JSON.parse(json) as unknown;
    const paths: (string | number)[][] = [];
    const walk = (value: unknown, path: (string | number)[]): void => {
      if (typeof value !== "object" || value === null) return void paths.push(path);
      for (const [k, v] of Object.entries(value)) walk(v, [...path, Array.isArray(value) ? Number(k) : k]);
    };
    walk(base, []);
    fc.assert(
      fc.property(fc.nat(paths.length - 1), fc.jsonValue(), (at, value) => {
        const copy = JSON.parse(json) as Record<string | number, unknown>;
        let holder = copy as Record<string | number, unknown>;
        const path = paths[at]!;
        for (const part of path.slice(0, -1)) holder = holder[part] as Record<string | number, unknown>;
        holder[path[path.length - 1]!] = value;
        const result = admitted(me, copy as unknown as Usage, 10);
        // general is 5 a minute and the snapshot spent it: a changed value may forget it (a window's end moved), never more
        if (typeof result === "number") expect(result).toBeLessThanOrEqual(5);
        else expect(result).toBeInstanceOf(PolicyConfigError);
      }),
      { seed: 20_261_127, numRuns: 300 },
    );
  });
});

describe("DESIGN (pure evaluation): a snapshot handed back unchanged is frozen too", () => {
  it("a 429 over a snapshot restored from JSON hands back the same object, frozen through; so do prune and release with nothing to do", () => {
    const restored = (): Usage => JSON.parse(spentJson()) as Usage;
    const spent = restored();
    const refused = step(me, spent);
    expect(refused.decision.status).toBe(429);
    expect(refused.usage).toBe(spent);
    expect(unfrozenPath(refused.usage)).toBeUndefined();
    const kept = restored();
    expect(prune(kept, T0 + 2)).toBe(kept);
    expect(unfrozenPath(kept)).toBeUndefined();
    const unreleased = restored();
    expect(release(unreleased, {}, T0 + 2)).toBe(unreleased);
    expect(unfrozenPath(unreleased)).toBeUndefined();
  });
});

describe("DESIGN §10: release checks its inputs as evaluate does", () => {
  const usage = emptyUsage();
  const ticket = step(send(1), usage).decision.release!;
  it.each([
    ["usage undefined", () => release(undefined as never, { release: ticket }, T0), "usage"],
    ["usage a string", () => release("x" as never, { release: ticket }, T0), "usage"],
    ["usage an empty object", () => release({} as never, { release: ticket }, T0), "usage"],
    ["decision null", () => release(usage, null as never, T0), "decision"],
    ["a ticket of another shape", () => release(usage, { release: 5 as never }, T0), "decision.release"],
    ["a ticket without its member", () => release(usage, { release: { ...ticket, member: undefined as never } }, T0), "decision.release"],
  ])("%s: PolicyConfigError naming %s", (_name, run, field) => {
    let thrown: unknown;
    try {
      run();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PolicyConfigError);
    expect((thrown as PolicyConfigError).field).toBe(field);
  });
});
