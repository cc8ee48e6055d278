import { describe, expect, it } from "vitest";
import { createPolicy, defaultOperations, defineConfig, emptyUsage, evaluate, PolicyConfigError, type PolicyOptions } from "../src/index.js";
import { T0, key } from "./fixtures.js";

function fieldOf(options: unknown): string | undefined {
  try {
    defineConfig(options as PolicyOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyConfigError);
    return (error as PolicyConfigError).field;
  }
  return undefined;
}

describe("config: host mistakes throw a typed error naming the field (DESIGN §10)", () => {
  it.each([
    [{ budgets: { general: { limit: 0 } } }, "budgets.general.limit"],
    [{ budgets: { audience: { window: 1.5 } } }, "budgets.audience.window"],
    [{ budgets: { write: { limit: "60" } } }, "budgets.write.limit"],
    [{ budgets: { "Bad Name": { limit: 1, window: 1 } } }, "budgets.Bad Name"],
    [{ budgets: { burst: { limit: 5 } } }, "budgets.burst.window"],
    [{ caps: { dispatch: { limit: -1 } } }, "caps.dispatch.limit"],
    [{ caps: { testSend: { limit: Infinity } } }, "caps.testSend.limit"],
    [{ roles: { editor: { settings: "write" } } }, "roles.editor"],
    [{ roles: { analyst: { money: "read" } } }, "roles.analyst.money"],
    [{ roles: { analyst: { content: "admin" } } }, "roles.analyst.content"],
    [{ docsUrl: "not a url" }, "docsUrl"],
    [{ dailyRetryAfter: "minutes" }, "dailyRetryAfter"],
    [{ dayStartsAtUtcOffsetMinutes: 1440 }, "dayStartsAtUtcOffsetMinutes"],
    [{ operations: {} }, "operations"],
    [{ operations: [{ id: "x", method: "FETCH", path: "/x" }] }, "operations[0].method"],
    [{ operations: [{ id: "x", method: "GET", path: "x" }] }, "operations[0].path"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", needs: "settings:write" }] }, "operations[0].needs"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", budgets: ["burst"] }] }, "operations[0].budgets"],
    [{ operations: [{ id: "x", method: "GET", path: "/x" }, { id: "x", method: "GET", path: "/y" }] }, "operations[1].id"],
    [{ operations: [{ id: "events.list", method: "GET", path: "/x" }, { id: "events.list", method: "GET", path: "/y" }] }, "operations[1].id"],
    // typos and wrong shapes are named, never silently ignored (regression: black-box audit)
    [{ caps: { dispatch: 5 } }, "caps.dispatch"],
    [{ caps: { dispach: { limit: 5 } } }, "caps.dispach"],
    [{ caps: { dispatch: { limt: 5 } } }, "caps.dispatch.limt"],
    [{ dailyRetryAfer: "seconds" }, "dailyRetryAfer"],
    [{ budgets: { general: null } }, "budgets.general"],
    [{ budgets: { general: { size: 10 } } }, "budgets.general.size"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", need: "content: read" }] }, "operations[0].need"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", budgets: "audience" }] }, "operations[0].budgets"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", paginated: "yes" }] }, "operations[0].paginated"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", filters: { s: { reader: [], specCase: 9 } } }] }, "operations[0].filters.s.specCase"],
    [{ docsUrl: "javascript:alert(1)" }, "docsUrl"],
    [{ docsUrl: "https://docs.example/errors?lang=en" }, "docsUrl"],
    [{ operations: [{ id: "me2", method: "GET", path: "/me" }] }, "operations[0].path"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", expand: { y: "nope" } }] }, "operations[0].expand.y"],
    [{ operations: [{ id: "x", method: "GET", path: "/x", filters: { status: { reader: "sent" } } }] }, "operations[0].filters.status.reader"],
    [{ operations: [{ id: "x", method: "POST", path: "/x", list: { field: "to", min: 1, max: 0 } }] }, "operations[0].list.max"],
    [{ operations: [{ id: "x", method: "POST", path: "/x", cap: "dispatch" }] }, "operations[0].cap"],
    ["nope", "config"],
    // templates that no request path can match (found by a black-box review: they were accepted)
    [{ operations: [{ id: "x", method: "GET", path: "/x?y=1" }] }, "operations[0].path"],
    [{ operations: [{ id: "x", method: "GET", path: "/x/../y" }] }, "operations[0].path"],
    [{ operations: [{ id: "x", method: "GET", path: "/n/{newsletter" }] }, "operations[0].path"],
    [{ operations: [{ id: "x", method: "GET", path: "/n/x{id}" }] }, "operations[0].path"],
    [{ operations: [{ id: "x", method: "GET", path: "/n/a#b" }] }, "operations[0].path"],
    // budget names an object prototype holds were dropped without a word (found by a black-box review)
    [{ budgets: { hasOwnProperty: null } }, "budgets.hasOwnProperty"],
    [{ budgets: { toString: { limit: 1, window: 1 } } }, "budgets.toString"],
    [{ budgets: JSON.parse('{"__proto__": {"limit": 5, "window": 10}}') }, "budgets.__proto__"],
    [{ budgets: { constructor: { limit: "bogus", window: 10 } } }, "budgets.constructor.limit"],
  ])("%j throws for %s", (options, field) => {
    expect(fieldOf(options)).toBe(field);
  });

  it("the message names the field and what it must be", () => {
    expect(() => defineConfig({ budgets: { general: { limit: 0, window: 60 } } })).toThrow("newsletter-policy: budgets.general.limit must be a whole number ≥ 1; got 0");
  });

  it("an array where an object is asked for is named as an array (it said 'got object'; found by a new-user review)", () => {
    expect(() => defineConfig([] as never)).toThrow("config must be an object of options; got an array");
    expect(() => defineConfig({ budgets: [] as never })).toThrow(/^newsletter-policy: budgets must be an object/);
    expect(() => defineConfig({ budgets: [{ limit: 5, window: 60 }] as never })).toThrow("budgets must be an object of budget name → { limit, window } (e.g. { audience: { limit: 120, window: 60 } }); got an array");
  });

  it("defaults are the spec's numbers", () => {
    const config = defineConfig();
    // read back by name, as the options spell them (they were a list; found by a contract review)
    expect(config.budgets).toEqual({ general: { limit: 600, window: 60 }, audience: { limit: 60, window: 60 }, write: { limit: 60, window: 60 } });
    expect(config.budgets.general!.limit).toBe(600);
    expect(Object.keys(config.budgets)).toEqual(["general", "audience", "write"]);
    expect(config.caps).toEqual({ dispatch: { limit: 25 }, testSend: { limit: 50 } });
    expect(config.roles.editor).toEqual({ content: "write", audience: "write", sending: "write", insights: "write", settings: "read", webhooks: "write" });
    expect(Object.keys(config.roles)).toEqual(["owner", "admin", "editor"]);
    // by name only: no prototype's names (constructor, toString) read as a role or a budget
    for (const name of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
      expect(config.roles[name], name).toBeUndefined();
      expect(config.budgets[name], name).toBeUndefined();
    }
    expect(config.dailyRetryAfter).toBe("hours");
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("extra budgets join the policy after the built-in ones and appear in RateLimit-Policy", () => {
    const config = defineConfig({
      budgets: { burst: { limit: 5, window: 1 } },
      operations: [{ id: "search", method: "GET", path: "/newsletters/{newsletter}/search", needs: "content: read", budgets: ["burst"] }],
    });
    const { decision } = evaluate({ method: "GET", path: "/newsletters/nl_1/search" }, { credential: key({ nl_1: { content: "read" } }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config });
    expect(decision.headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "burst";q=5;w=1');
    expect(decision.headers["RateLimit-Limit"]).toBe("5");
  });

  it("plain options objects are accepted in place of a compiled config, and validated", () => {
    const state = { credential: key({}), roles: {}, usage: emptyUsage(), now: T0 };
    expect(evaluate({ method: "GET", path: "/me" }, { ...state, config: { budgets: { general: { limit: 7 } } } }).decision.headers["RateLimit-Limit"]).toBe("7");
    expect(() => evaluate({ method: "GET", path: "/me" }, { ...state, config: { caps: { dispatch: { limit: 0 } } } })).toThrow(PolicyConfigError);
    expect(() => createPolicy({ config: { docsUrl: "x" } })).toThrow(/docsUrl/);
  });

  it("a budget named constructor is a budget like any other (own names only)", () => {
    const config = defineConfig({ budgets: { constructor: { limit: 5, window: 10 } }, operations: [{ id: "builds.run", method: "POST", path: "/builds", budgets: ["constructor"] }] });
    expect(Object.keys(config.budgets)).toEqual(["general", "audience", "write", "constructor"]);
    expect(Object.hasOwn(config.budgets, "constructor") && config.budgets.constructor).toEqual({ limit: 5, window: 10 });
  });

  it("found by a config review: a budget no operation charges (a misspelt audiance), a template no request can match (:param, %20, a newsletter parameter by another name) and a docsUrl with a trailing ? or #, spaces or credentials throw naming the field", () => {
    const cases: [PolicyOptions, string][] = [
      [{ budgets: { audiance: { limit: 120, window: 60 } } }, "budgets.audiance"],
      [{ operations: [{ id: "a", method: "GET", path: "/newsletters/:newsletter/stats", needs: "insights: read" }] }, "operations[0].path"],
      [{ operations: [{ id: "b", method: "GET", path: "/newsletters/{newsletter}/weekly%20report", needs: "insights: read" }] }, "operations[0].path"],
      [{ operations: [{ id: "c", method: "GET", path: "/newsletters/{newsletterId}/stats" }] }, "operations[0].path"],
      [{ docsUrl: "https://x.test/e?" }, "docsUrl"],
      [{ docsUrl: "https://x.test/e#" }, "docsUrl"],
      [{ docsUrl: " https://x.test/e" }, "docsUrl"],
      [{ docsUrl: "https://x.test/e\n" }, "docsUrl"],
      [{ docsUrl: "https://u:secret@x.test/e" }, "docsUrl"],
    ];
    for (const [options, field] of cases) {
      let thrown: unknown;
      try {
        defineConfig(options);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(options)).toBeInstanceOf(PolicyConfigError);
      expect((thrown as PolicyConfigError).field).toBe(field);
    }
    expect(defineConfig({ docsUrl: "https://x.test/errors/" }).docsUrl).toBe("https://x.test/errors");
  });

  it("found by a config review: loose shapes inside an operation throw naming them (an expand path a request cannot name, misspelt keys of a filter rule or a list bound, filters as an array, a list without items)", () => {
    const op = { id: "reports.list", method: "GET", path: "/newsletters/{newsletter}/reports", needs: "insights: read" } as const;
    const cases: [object, string][] = [
      [{ ...op, expand: { "subscriber,address": "audience: read" } }, "operations[0].expand.subscriber,address"],
      [{ ...op, expand: { "": "audience: read" } }, "operations[0].expand."],
      [{ ...op, filters: { status: { reader: ["sent"], specCas: 4 } } }, "operations[0].filters.status.specCas"],
      [{ ...op, filters: [{ reader: ["sent"] }] }, "operations[0].filters"],
      [{ ...op, method: "POST", list: { field: "to", min: 1, max: 5, itmes: "addresses" } }, "operations[0].list.itmes"],
      [{ ...op, method: "POST", list: { field: "to", min: 1, max: 5 } }, "operations[0].list.items"],
    ];
    for (const [spec, field] of cases) {
      let thrown: unknown;
      try {
        defineConfig({ operations: [spec as never] });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(spec)).toBeInstanceOf(PolicyConfigError);
      expect((thrown as PolicyConfigError).field).toBe(field);
    }
  });

  // spec §4 states these of the built-in operations; DESIGN §9 makes only the unstated permissions
  // configurable. A replacement by id could drop any of them (found by a black-box review).
  it.each([
    [{ id: "subscribers.list", method: "GET", path: "/newsletters/{newsletter}/subscribers", needs: "content: read" }, "needs"],
    [{ id: "subscribers.list", budgets: [] }, "budgets"],
    [{ id: "subscribers.get", needs: "audience: write" }, "needs"],
    [{ id: "subscribers.list", paginated: false }, "paginated"],
    [{ id: "articles.send", method: "POST", path: "/articles/{article}/send", needs: "content: write" }, "needs"],
    [{ id: "articles.send", cap: "testSend" }, "cap"],
    [{ id: "articles.schedule", path: "/articles/{article}/later" }, "path"],
    [{ id: "articles.testSend", list: { field: "to", min: 1, max: 10, items: "addresses" } }, "list"],
    [{ id: "tags.subscribers.add", list: { field: "subscribers", min: 1, max: 5000, items: "subscriber ids" } }, "list"],
    [{ id: "articles.list", filters: {} }, "filters"],
    [{ id: "threads.list", filters: { visibility: { reader: ["public", "private"], specCase: 6 } } }, "filters"],
    [{ id: "insights.list", expand: {} }, "expand"],
    [{ id: "articles.list", needs: "content: write" }, "needs"],
    [{ id: "me.get", needs: "content: read" }, "needs"],
    [{ id: "rateLimit.get", needs: "account: read" }, "needs"],
    [{ id: "articles.update", method: "POST" }, "method"],
  ])("spec §4: replacing a built-in operation cannot change what the spec states of it: %j throws for operations[0].%s", (operation, name) => {
    expect(fieldOf({ operations: [operation] })).toBe(`operations[0].${name}`);
  });

  it("spec §4, DESIGN §9: a replacement that changes an unstated permission keeps the rest of the built-in: the test-send cap and its 5 addresses", () => {
    const config = defineConfig({ caps: { testSend: { limit: 1 } }, operations: [{ id: "articles.testSend", method: "POST", path: "/articles/{article}/test-send", needs: "content: write" }] });
    const credential = key({ nl_1: { content: "write" } });
    const send = (to: string[], usage = emptyUsage()) => evaluate({ method: "POST", path: "/articles/a_1/test-send", newsletter: "nl_1", body: { to } }, { credential, roles: { nl_1: "owner" }, usage, now: T0, config });
    const seven = Array.from({ length: 7 }, (_, i) => `r${i}@example.com`);
    expect(send(seven).decision.body?.error).toMatchObject({ code: "invalid_request", param: "to" });
    const first = send(["a@example.com"]);
    expect(first.decision).toMatchObject({ status: 200, charged: { caps: ["testSend"] } });
    expect(send(["a@example.com"], first.usage).decision.status).toBe(429);
    // the permission changed: sending: write alone no longer does
    const sender = key({ nl_1: { sending: "write" } });
    expect(evaluate({ method: "POST", path: "/articles/a_1/test-send", newsletter: "nl_1", body: { to: ["a@example.com"] } }, { credential: sender, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config }).decision.body?.error.allowed_values).toEqual(["content: write"]);
  });

  it("a replacement may add budgets to a built-in operation's", () => {
    const config = defineConfig({ budgets: { burst: { limit: 5, window: 1 } }, operations: [{ id: "subscribers.list", method: "GET", path: "/newsletters/{newsletter}/subscribers", budgets: ["audience", "burst"] }] });
    expect(config.operations.find((op) => op.id === "subscribers.list")).toMatchObject({ needs: "audience: read", budgets: ["audience", "burst"], paginated: true });
  });

  it("DESIGN §9 an operation with a catalogue id replaces that operation: the unstated permissions are configurable", () => {
    const config = defineConfig({ operations: [{ id: "events.list", method: "GET", path: "/newsletters/{newsletter}/events", needs: "insights: read", budgets: ["audience"] }] });
    const run = (grants: Record<string, string>) =>
      evaluate({ method: "GET", path: "/newsletters/nl_1/events" }, { credential: key({ nl_1: grants as never }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config }).decision;
    expect(run({ insights: "read" })).toMatchObject({ status: 200, operation: "events.list" });
    expect(run({ audience: "read" }).body?.error.allowed_values).toEqual(["insights: read"]);
    expect(config.operations.filter((op) => op.id === "events.list")).toHaveLength(1);
  });

  it("a misspelt who or state field (limit for limits) throws PolicyConfigError naming it: the plan's limits were dropped without a word and the config's decided; a host's own field of another name passes (noted and left alone last stop)", async () => {
    const credential = key({ nl_1: { content: "read" } });
    const request = { method: "GET", path: "/newsletters/nl_1/articles" };
    const policy = createPolicy({ config: { docsUrl: "https://docs.example/errors" } });
    for (const misspelt of ["limit", "limts", "Limits", "role"]) {
      await expect(policy.check(request, { credential, roles: { nl_1: "owner" }, [misspelt]: { budgets: { general: { limit: 1 } } } } as never)).rejects.toThrow(`who.${misspelt} is not a field of who`);
      expect(() => evaluate(request, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, [misspelt]: {} } as never)).toThrow(`state.${misspelt}`);
    }
    expect(() => evaluate(request, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, nowMs: 1 } as never)).toThrow("state.nowMs");
    // the host's own fields of other names ride along
    expect((await policy.check(request, { credential, roles: { nl_1: "owner" }, user: { id: "u_1" }, tenant: "t_1" } as never)).allowed).toBe(true);
    expect(evaluate(request, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, user: { id: "u_1" } } as never).decision.allowed).toBe(true);
  });

  it("invalid host state throws a typed error: missing roles or usage (never a TypeError)", async () => {
    const state = { credential: key({ nl_1: { content: "read" } }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 };
    const request = { method: "GET", path: "/newsletters/nl_1/articles" };
    expect(() => evaluate(request, { ...state, roles: undefined as never })).toThrow(PolicyConfigError);
    expect(() => evaluate(request, { ...state, roles: null as never })).toThrow(/roles/);
    expect(() => evaluate({ method: "GET", path: "/me" }, { ...state, roles: undefined as never })).toThrow(/roles/);
    expect(() => evaluate(request, { ...state, usage: undefined as never })).toThrow(/usage/);
    expect(() => evaluate(request, { ...state, credential: { ...state.credential, kind: "token" } as never })).toThrow(/credential.kind/);
    // account: "read" (the scope's spelling) was read as no account access: every account call 403 (found by a black-box review)
    for (const account of ["read", 1, null, {}]) {
      expect(() => evaluate({ method: "GET", path: "/me" }, { ...state, credential: { ...state.credential, account } as never })).toThrow(/credential\.account must be true or false/);
      await expect(createPolicy().check({ method: "GET", path: "/me" }, { credential: { ...state.credential, account } as never, roles: {} })).rejects.toThrow(PolicyConfigError);
    }
    await expect(createPolicy({ clock: () => T0 }).check(request, { credential: state.credential, roles: undefined as never })).rejects.toThrow(PolicyConfigError);
  });

  it("DESIGN §10 host mistakes that would otherwise answer every request 404 or 503 throw a typed error naming the field (found by a black-box review)", async () => {
    const credential = key({ nl_1: { content: "read" } });
    const state = { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 };
    const request = { method: "GET", path: "/newsletters/nl_1/articles" };
    const field = (run: () => unknown): string | undefined => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(PolicyConfigError);
        return (error as PolicyConfigError).field;
      }
      return undefined;
    };
    // an async role lookup: a Promise is not a role
    expect(field(() => evaluate(request, { ...state, roles: () => Promise.resolve("owner") as never }))).toBe("roles");
    expect(() => evaluate(request, { ...state, roles: () => Promise.resolve("owner") as never })).toThrow(/Promise/);
    // a function's other non-names reach nothing: its newsletter comes from the request, and a plain
    // lookup hands back Object.prototype for __proto__ (untrusted input never throws)
    expect(evaluate(request, { ...state, roles: () => 5 as never }).decision.status).toBe(404);
    expect(field(() => evaluate(request, { ...state, roles: { nl_1: { role: "owner" } } as never }))).toBe("roles.nl_1");
    // a Map's entries are not its properties
    expect(field(() => evaluate(request, { ...state, roles: new Map([["nl_1", "owner"]]) as never }))).toBe("roles");
    expect(field(() => evaluate(request, { ...state, credential: { ...credential, newsletters: new Map([["nl_1", { content: "read" }]]) as never } }))).toBe("credential.newsletters");
    expect(field(() => evaluate(request, { ...state, credential: { ...credential, newsletters: [] as never } }))).toBe("credential.newsletters");
    // none is still none: undefined and null name no role (404), as before
    expect(evaluate(request, { ...state, roles: () => undefined }).decision.status).toBe(404);
    expect(evaluate(request, { ...state, roles: { nl_1: null } as never }).decision.status).toBe(404);
    await expect(createPolicy({ clock: () => T0 }).check(request, { credential, roles: () => Promise.resolve("owner") as never })).rejects.toThrow(PolicyConfigError);
    // createPolicy's options: a misspelt name, a store that is not one, a hook that is not a function
    expect(field(() => createPolicy({ failopen: true } as never))).toBe("failopen");
    expect(field(() => createPolicy({ store: {} as never }))).toBe("store");
    expect(field(() => createPolicy({ onDecision: "log" as never }))).toBe("onDecision");
    expect(field(() => createPolicy({ failOpen: "yes" as never }))).toBe("failOpen");
    expect(field(() => createPolicy({ clock: 5 as never }))).toBe("clock");
  });

  it("invalid host state throws: a credential without an id, a clock that is not a number", async () => {
    const state = { credential: key({}), roles: {}, usage: emptyUsage(), now: T0 };
    expect(() => evaluate({ method: "GET", path: "/me" }, { ...state, credential: { id: "" } as never })).toThrow(/credential.id/);
    expect(() => evaluate({ method: "GET", path: "/me" }, { ...state, credential: { id: "k" } as never })).toThrow(/credential.newsletters/);
    expect(() => evaluate({ method: "GET", path: "/me" }, { ...state, now: Number.NaN })).toThrow(/now/);
    const policy = createPolicy({ clock: () => Number.POSITIVE_INFINITY });
    await expect(policy.check({ method: "GET", path: "/me" }, { credential: key({}), roles: {} })).rejects.toThrow(/clock\(\)/);
  });
});

describe("a config is the policy's own once defineConfig made it (found by a review)", () => {
  it("a copy of a compiled config ({ ...config }, structuredClone, JSON, the other build's) is read as options and decides as the config does; changed in one field, only that field changes (a copy threw; found by a contract review)", () => {
    const options: PolicyOptions = {
      docsUrl: "https://x.test/e",
      budgets: { audience: { limit: 2, window: 30 }, burst: { limit: 5, window: 1 } },
      caps: { testSend: { limit: 3 } },
      roles: { analyst: { insights: "read", content: "read" } },
      dayStartsAtUtcOffsetMinutes: 60,
      operations: [
        { id: "search", method: "GET", path: "/newsletters/{newsletter}/search", needs: "content: read", budgets: ["burst"] },
        { id: "events.list", needs: "insights: write" } as never,
      ],
    };
    const compiled = defineConfig(options);
    const requests = [
      { method: "GET", path: "/newsletters/nl_1/subscribers" },
      { method: "GET", path: "/newsletters/nl_1/search" },
      { method: "GET", path: "/newsletters/nl_1/events" },
      { method: "POST", path: "/articles/a_1/test-send", newsletter: "nl_1", body: { to: ["a@x.test"] } },
    ];
    const run = (config: unknown, role: string) => {
      let usage = emptyUsage();
      const out: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        for (const request of requests) {
          const r = evaluate(request, { credential: key({ nl_1: { audience: "read", content: "write", insights: "write", sending: "write" } }), roles: { nl_1: role }, usage, now: T0 + i, config: config as never });
          usage = r.usage;
          out.push([r.decision.status, r.decision.headers, r.decision.body?.error.code]);
        }
      }
      return out;
    };
    const copies = [{ ...compiled }, structuredClone({ ...compiled }), JSON.parse(JSON.stringify(compiled)) as unknown];
    for (const copy of copies) {
      expect(defineConfig(copy as PolicyOptions)).toEqual(compiled);
      for (const role of ["owner", "editor", "analyst"]) expect(run(copy, role)).toEqual(run(compiled, role));
      expect(() => createPolicy({ config: copy as never })).not.toThrow();
    }
    const seconds = defineConfig({ ...compiled, dailyRetryAfter: "seconds" });
    expect(seconds).toEqual({ ...compiled, dailyRetryAfter: "seconds" });
    // a built-in role is taken back only with its own caps: the spec's editor is capped at settings: read (§5.6)
    expect(() => defineConfig({ ...compiled, roles: { ...compiled.roles, editor: { ...compiled.roles.editor!, settings: "write" } } })).toThrow(expect.objectContaining({ field: "roles.editor" }));
    expect(() => defineConfig({ roles: { admin: { content: "write" } } })).toThrow(expect.objectContaining({ field: "roles.admin" }));
    expect(() => defineConfig({ budgets: { audiance: { limit: 3 } } } as never)).toThrow(expect.objectContaining({ field: "budgets.audiance", message: expect.stringContaining("did you mean audience") }));
    // a budget of the host's own with a window is still its own (charged by an operation it names)
    expect(() => defineConfig({ budgets: { audiance: { limit: 3, window: 60 } } })).toThrow(expect.objectContaining({ message: expect.stringContaining("charged by no operation") }));
  });

  const credential = key({ nl_1: { sending: "write" } });
  const sixAddresses = { method: "POST", path: "/articles/a_1/test-send", newsletter: "nl_1", body: { to: ["a@x", "b@x", "c@x", "d@x", "e@x", "f@x"] } };
  const send = { method: "POST", path: "/articles/a_1/send", newsletter: "nl_1" };

  it("spec §8: changing the operations view or the host's own spec objects afterwards changes no decision (list bounds, daily caps stay)", () => {
    const own = { id: "reports.send", method: "POST", path: "/reports/{report}/send", needs: "sending: write", cap: "dispatch" } as const;
    const hostSpec = { ...own };
    const config = defineConfig({ docsUrl: "https://docs.example/errors", operations: [hostSpec] });
    const testSend = config.operations.find((o) => o.id === "articles.testSend")!;
    expect(Object.isFrozen(testSend) && Object.isFrozen(testSend.list)).toBe(true);
    expect(() => Object.assign(testSend as { list?: unknown }, { list: undefined })).toThrow(TypeError);
    (hostSpec as { cap?: string }).cap = undefined; // the host's own object stays its own, and changes nothing
    const state = { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config };
    expect(evaluate(sixAddresses, state).decision.status).toBe(400);
    expect(evaluate(send, state).decision.charged.caps).toEqual(["dispatch"]);
    expect(evaluate({ method: "POST", path: "/reports/r_1/send", newsletter: "nl_1" }, state).decision.charged.caps).toEqual(["dispatch"]);
  });

  it("spec §5.6: a role set on the config's roles view reaches no decision", () => {
    const config = defineConfig({ docsUrl: "https://docs.example/errors" });
    expect(Object.isFrozen(config.roles) && Object.isFrozen(config.roles.editor)).toBe(true);
    expect(Object.isFrozen(config.budgets) && Object.isFrozen(config.budgets.general)).toBe(true);
    // what sloppy-mode code could do to a view that was not frozen
    expect(() => Object.assign(config.roles as Record<string, unknown>, { intruder: { content: "write", audience: "write", sending: "write", insights: "write", settings: "write", webhooks: "write" } })).toThrow(TypeError);
    const decision = evaluate({ method: "GET", path: "/newsletters/nl_1/subscribers" }, { credential: key({ nl_1: { audience: "read" } }), roles: { nl_1: "intruder" }, usage: emptyUsage(), now: T0, config }).decision;
    expect(decision.status).toBe(404);
    expect(decision.reason).toMatchObject({ rule: "no_reach", cause: "unknown_role" });
  });
});

describe("a config cannot take a request past a rule the spec states (found by a config review)", () => {
  it("spec §4: a host route that takes requests from a built-in's (more fixed words, the same method) throws naming its path", () => {
    for (const op of [
      { id: "nl1.subscribers.export", method: "GET", path: "/newsletters/nl_1/subscribers" },
      { id: "launch.send", method: "POST", path: "/articles/launch/send", needs: "sending: write" },
      { id: "subscribers.export", method: "GET", path: "/subscribers/export" },
      // the same words in another case: Express's router matches them (found by a permissions review)
      { id: "legacy.send", method: "POST", path: "/Articles/{article}/send", needs: "content: read" },
      { id: "legacy.send", method: "POST", path: "/articles/{article}/SEND", needs: "content: read" },
      { id: "legacy.subscribers", method: "GET", path: "/Newsletters/{newsletter}/subscribers", needs: "content: read" },
    ] as const) {
      let thrown: unknown;
      try {
        defineConfig({ operations: [op] });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, op.path).toBeInstanceOf(PolicyConfigError);
      expect((thrown as PolicyConfigError).field).toBe("operations[0].path");
    }
    // beside the built-ins: another method, another fixed word, another shape
    expect(() => defineConfig({ operations: [{ id: "subscribers.purge", method: "DELETE", path: "/newsletters/{newsletter}/subscribers", needs: "audience: write" }] })).not.toThrow();
    expect(() => defineConfig({ operations: [{ id: "exports.list", method: "GET", path: "/newsletters/{newsletter}/exports", needs: "audience: read" }] })).not.toThrow();
  });

  it("two host operations whose paths differ only in case throw: Express routes both to the first handler, so a content: read key reached a webhooks: write one (found by a review)", () => {
    const secrets = { id: "webhooks.secrets", method: "GET", path: "/newsletters/{newsletter}/webhook-secrets", needs: "webhooks: write" } as const;
    const other = { id: "webhooks.secrets.public", method: "GET", path: "/newsletters/{newsletter}/Webhook-Secrets", needs: "content: read" } as const;
    expect(() => defineConfig({ operations: [secrets, other] })).toThrow(expect.objectContaining({ field: "operations[1].path" }));
    expect(() => defineConfig(defineConfig({}) as never)).toThrow(/already a compiled config/);
  });

  it("a Map, a class instance or fields on a prototype where the config or plan limits ask for an object throw naming the field (they were read as empty: budgets as a Map kept general at 600, a dispatch cap at 25; found by a config review)", () => {
    const cases: [PolicyOptions, string][] = [
      [{ budgets: new Map([["general", { limit: 1, window: 60 }]]) as never }, "budgets"],
      [{ caps: new Map([["dispatch", { limit: 1 }]]) as never }, "caps"],
      [{ caps: { dispatch: new Map([["limit", 1]]) as never } }, "caps.dispatch"],
      [{ roles: new Map([["analyst", { content: "read" }]]) as never }, "roles"],
      [{ budgets: Object.create({ general: { limit: 1 } }) }, "budgets"],
      [{ budgets: { general: new (class { limit = 1; window = 60; })() } }, "budgets.general"],
    ];
    for (const [options, field] of cases) expect(() => defineConfig(options), field).toThrow(expect.objectContaining({ field }));
    expect(() => defineConfig({ budgets: new Map() as never })).toThrow(/got a Map/);
    const state = { credential: key({ nl_1: { audience: "read" } }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 };
    const read = { method: "GET", path: "/newsletters/nl_1/subscribers" };
    expect(() => evaluate(read, { ...state, limits: new Map([["budgets", { audience: { limit: 1 } }]]) as never })).toThrow(expect.objectContaining({ field: "limits" }));
    expect(() => evaluate(read, { ...state, limits: { budgets: new Map([["audience", { limit: 1 }]]) as never } })).toThrow(expect.objectContaining({ field: "limits.budgets" }));
    // plain objects of every kind still read: frozen, without a prototype, JSON's
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { audience: Object.freeze({ limit: 7, window: 60 }) });
    expect(defineConfig({ budgets: bare as never }).budgets.audience.limit).toBe(7);
    expect(defineConfig(JSON.parse('{"budgets":{"audience":{"limit":8}}}') as PolicyOptions).budgets.audience.limit).toBe(8);
  });

  it("spec §5.6: a role named like a built-in but for compatibility forms or invisible characters (fullwidth, zero-width) throws, as Editor and 'editor ' do (found by a config review)", () => {
    for (const name of ["ｅｄｉｔｏｒ", "editor\u200b", "\u200deditor", "EDITOR\u00ad", "Ｏｗｎｅｒ"]) {
      expect(() => defineConfig({ roles: { [name]: { settings: "write" } } }), JSON.stringify(name)).toThrow(expect.objectContaining({ field: `roles.${name}` }));
    }
    expect(() => defineConfig({ roles: { editorial: { content: "read" } } })).not.toThrow();
  });

  it("a path that names a parameter twice throws naming its path: /newsletters/{newsletter}/x/{newsletter} was judged on the first newsletter while Express and Fastify hand the handler the second (found by a config review)", () => {
    for (const path of ["/newsletters/{newsletter}/x/{newsletter}", "/reports/{report}/copies/{report}"]) {
      expect(() => defineConfig({ operations: [{ id: "x", method: "GET", path, needs: "settings: read" }] })).toThrow(expect.objectContaining({ field: "operations[0].path", message: expect.stringContaining("twice") }));
    }
    expect(() => defineConfig({ operations: [{ id: "y", method: "GET", path: "/newsletters/{newsletter}/reports/{report}", needs: "insights: read" }] })).not.toThrow();
  });

  it("a built-in replaced twice throws naming the second replacement's id (it named operations[0].method, as if the first were a new operation)", () => {
    expect(() => defineConfig({ operations: [{ id: "events.list", needs: "audience: write" } as never, { id: "events.list", needs: "audience: read" } as never] })).toThrow(
      expect.objectContaining({ field: "operations[1].id", message: expect.stringContaining("a second time (operations[0] replaces it already)") }),
    );
  });

  it("an operation id of __proto__ throws naming it: permitted's filters and expand are keyed by id, and it set their prototype (found by a permissions review)", () => {
    expect(() => defineConfig({ operations: [{ id: "__proto__", method: "GET", path: "/newsletters/{newsletter}/drafts", needs: "content: read" }] })).toThrow(expect.objectContaining({ field: "operations[0].id" }));
    expect(() => defineConfig({ operations: [{ id: "constructor", method: "GET", path: "/newsletters/{newsletter}/drafts", needs: "content: read" }] })).not.toThrow();
  });

  it("spec §2, §5: account: read on a newsletter's operation (replacing an unstated permission, or a host path with {newsletter}) throws naming needs", () => {
    expect(() => defineConfig({ operations: [{ id: "events.list", needs: "account: read" } as never] })).toThrow(/operations\[0\]\.needs/);
    expect(() => defineConfig({ operations: [{ id: "tags.subscribers.add", method: "POST", path: "/tags/{tag}/subscribers", needs: "account: read" }] })).toThrow(/operations\[0\]\.needs/);
    expect(() => defineConfig({ operations: [{ id: "settings.get", method: "GET", path: "/newsletters/{newsletter}/settings", needs: "account: read" }] })).toThrow(/operations\[0\]\.needs/);
    expect(() => defineConfig({ operations: [{ id: "profile.get", method: "GET", path: "/profile", needs: "account: read" }] })).not.toThrow();
  });

  it("spec §7 #4: the exported catalogue is frozen through: a reader's filter values cannot be widened", () => {
    const articles = defaultOperations.find((o) => o.id === "articles.list")!;
    expect(() => ((articles.filters!.status!.reader as string[])[0] = "draft")).toThrow(TypeError);
    expect(() => Object.assign(articles as { needs?: string }, { needs: "content: read" })).toThrow(TypeError);
    const decision = evaluate({ method: "GET", path: "/newsletters/nl_1/articles?status=draft" }, { credential: key({ nl_1: { content: "read" } }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 }).decision;
    expect(decision.status).toBe(403);
  });

  it("spec §5.6: a role named like a built-in but for case or spaces (Editor, 'editor ', EDITOR) or empty throws naming it", () => {
    const caps = { content: "write", audience: "write", sending: "write", insights: "write", settings: "write", webhooks: "write" } as const;
    for (const name of ["Editor", "editor ", "EDITOR", " Owner", ""]) {
      expect(() => defineConfig({ roles: { [name]: caps } }), JSON.stringify(name)).toThrow(PolicyConfigError);
    }
    expect(() => defineConfig({ roles: { editorial: caps } })).not.toThrow();
  });
});
