/**
 * Query-name fidelity against the real parsers: whatever name a server's query parser hands a
 * handler, the policy must have judged its value under that name (spec §7 #4–#7).
 *
 * Found: "bracketed query names get past the reader view and expand checks" — Express 4's qs reads
 * `?[status]=draft` and `?%5Bexpand%5D=subscriber` as `status` / `expand`; the library read another
 * name, so a read-only key listed drafts and an insights-only key expanded subscribers.
 */
import { parse as nodeParse } from "node:querystring";
import fc from "fast-check";
import express5 from "express";
import express4 from "express4";
import Fastify from "fastify";
import { Hono } from "hono";
import qs from "qs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyUsage, evaluate, type Credential, type Decision, type PolicyRequest } from "../../src/index.js";

type Parsed = Record<string, unknown>;
type Parser = (query: string) => Parsed | Promise<Parsed>;

// Read-only on nl_1 (content and insights at read, no audience): it may filter articles by
// status=sent only, may not use tag, may see public threads only, and may not expand subscriber.
const reader: Credential = { id: "key_reader", kind: "api_key", newsletters: { nl_1: { content: "read", insights: "read" } } };
const NOW = Date.UTC(2026, 10, 22, 10);

function judge(request: { path: string; query?: unknown }): Decision {
  return evaluate({ method: "GET", ...request } as PolicyRequest, { credential: reader, roles: { nl_1: "owner" }, usage: emptyUsage(), now: NOW }).decision;
}

/** The operations with a reader-restricted parameter, and which values a handler must not get. */
const cases = [
  { path: "/newsletters/nl_1/articles", param: "status", forbidden: (v: string) => v !== "sent" },
  { path: "/newsletters/nl_1/articles", param: "tag", forbidden: () => true },
  { path: "/newsletters/nl_1/threads", param: "visibility", forbidden: (v: string) => v !== "public" },
  { path: "/newsletters/nl_1/insights", param: "expand", forbidden: (v: string) => v === "subscriber" },
] as const;

/**
 * Every filter value a handler reads out of one parsed value: each leaf string read as the list the
 * library documents (repeated or comma-separated, trimmed, empties dropped).
 */
function leaves(value: unknown): string[] {
  if (typeof value === "string") return value.split(",").map((part) => part.trim()).filter((v) => v !== "");
  if (typeof value === "object" && value !== null) return Object.values(value).flatMap(leaves);
  return [];
}

/**
 * The forbidden value a parser hands the handler under `param`, if any. An object (not a list of
 * strings) is forbidden whatever its leaves: `{ $ne: "sent" }` is an operator a handler's database
 * query obeys ("status is not sent"), not the value "sent".
 */
function handed(parsed: Parsed, c: (typeof cases)[number]): string | undefined {
  if (!Object.hasOwn(parsed, c.param)) return undefined;
  const value = parsed[c.param];
  const list = Array.isArray(value) ? value : [value];
  if (list.some((v) => typeof v !== "string")) return JSON.stringify(value);
  return leaves(value).find((v) => c.forbidden(v));
}

// The real parsers, as each framework calls them.
const fastify = Fastify();
let fastifyQuery: Parsed = {};
fastify.get("/q", async (request) => {
  fastifyQuery = request.query as Parsed;
  return "";
});
const hono = new Hono();
let honoQuery: Parsed = {};
hono.get("/q", (c) => {
  honoQuery = c.req.queries() ?? {};
  return c.text("");
});
const express4Extended = express4().get("query parser fn") as (s: string) => Parsed; // Express 4 default: "extended" (qs)
const express5Simple = express5().get("query parser fn") as (s: string) => Parsed; // Express 5 default: "simple" (node:querystring)
const express5Extended = express5().set("query parser", "extended").get("query parser fn") as (s: string) => Parsed;

const parsers: Record<string, Parser> = {
  "qs (defaults)": (s) => qs.parse(s),
  "qs (allowDots)": (s) => qs.parse(s, { allowDots: true }),
  "Express 4 default (qs, extended)": express4Extended,
  "Express 5 default (simple)": express5Simple,
  "Express 5 extended": express5Extended,
  "Fastify 5 default": async (s) => {
    await fastify.inject({ method: "GET", url: `/q?${s}` });
    return fastifyQuery;
  },
  "Hono 4 c.req.queries()": async (s) => {
    await hono.request(`http://localhost/q?${s}`);
    return honoQuery;
  },
  "node:querystring": (s) => nodeParse(s) as Parsed,
  URLSearchParams: (s) => {
    const out: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
    for (const [k, v] of new URLSearchParams(s)) (out[k] ??= []).push(v);
    return out;
  },
};

beforeAll(() => fastify.ready());
afterAll(() => fastify.close());

describe("bracketed query names get past the reader view and expand checks (regression)", () => {
  it("qs reads ?[status]=draft and ?%5Bexpand%5D=subscriber as status / expand: the policy refuses both from the path", () => {
    expect(express4Extended("[status]=draft")).toEqual({ status: "draft" });
    expect(express4Extended("%5Bexpand%5D=subscriber")).toEqual({ expand: "subscriber" });
    const status = judge({ path: "/newsletters/nl_1/articles?[status]=draft" });
    expect(status).toMatchObject({ status: 403, body: { error: { code: "insufficient_scope", param: "status", allowed_values: ["sent"] } } });
    const expand = judge({ path: "/newsletters/nl_1/insights?%5Bexpand%5D=subscriber" });
    expect(expand).toMatchObject({ status: 403, body: { error: { code: "insufficient_scope", param: "expand" } } });
  });

  it("the other spellings qs reads as the name are refused too: [tag], .visibility (allowDots)", () => {
    expect(judge({ path: "/newsletters/nl_1/articles?%5Btag%5D=x" })).toMatchObject({ status: 403, body: { error: { param: "tag" } } });
    expect(judge({ path: "/newsletters/nl_1/threads?.visibility=private" })).toMatchObject({ status: 403, body: { error: { param: "visibility" } } });
  });

  it("a name qs may read as an object under its parent is refused 400 naming the parent: status[, status[x], [[status]], [status]x, status.x", () => {
    for (const q of ["status[=draft", "status[x]=draft", "[[status]]=draft", "[status]x=draft", "status.x=draft", "status[21]=draft"]) {
      expect(judge({ path: `/newsletters/nl_1/articles?${q}` }), q).toMatchObject({ status: 400, body: { error: { code: "invalid_request", param: "status" } } });
    }
  });

  it("spec §4, §7 #4 and #6: a reader's allowed value under a qs operator (status[$ne]=sent is { status: { $ne: 'sent' } }) is refused, not read as the value", () => {
    // found by a black-box review: the library read status[$ne]=sent as status=sent and allowed it,
    // while qs hands the handler an operator meaning "every article that is not sent"
    expect(qs.parse("status[$ne]=sent")).toEqual({ status: { $ne: "sent" } });
    for (const path of ["/newsletters/nl_1/articles?status[$ne]=sent", "/newsletters/nl_1/articles?status[not]=sent", "/newsletters/nl_1/threads?visibility[$ne]=public", "/newsletters/nl_1/articles?[status][$ne]=sent", "/newsletters/nl_1/articles?status.$ne=sent"]) {
      const param = path.includes("visibility") ? "visibility" : "status";
      expect(judge({ path }), path).toMatchObject({ allowed: false, status: 400, body: { error: { code: "invalid_request", param } } });
    }
    expect(judge({ path: "/newsletters/nl_1/articles", query: { "status[$ne]": "sent" } })).toMatchObject({ status: 400, body: { error: { param: "status" } } });
    expect(judge({ path: "/newsletters/nl_1/articles", query: qs.parse("status[$ne]=sent") })).toMatchObject({ status: 400, body: { error: { param: "status" } } });
  });

  it("counterexamples the property found against older readers: status[]status=draft, tag%5B=x, visibility[0]status=private", () => {
    expect(judge({ path: "/newsletters/nl_1/articles?status[]status=draft" })).toMatchObject({ status: 400, body: { error: { param: "status" } } });
    expect(judge({ path: "/newsletters/nl_1/articles?tag%5B=x" })).toMatchObject({ status: 400, body: { error: { param: "tag" } } });
    expect(judge({ path: "/newsletters/nl_1/threads?visibility[0]status=private" })).toMatchObject({ status: 400, body: { error: { param: "visibility" } } });
  });

  it("spec §7 #4–#7: encoded brackets in a name that cannot be decoded (a stray %) are brackets to qs, and judged so (found by an oracle review: a read-only key listed drafts)", () => {
    const refused = [
      ["/newsletters/nl_1/articles?status%5B%5D%=draft", "status"],
      ["/newsletters/nl_1/articles?status%5b%5d%ZZ=draft", "status"],
      ["/newsletters/nl_1/articles?tag%5B%5D%=x", "tag"],
      ["/newsletters/nl_1/threads?visibility%5B%5D%=private", "visibility"],
      ["/newsletters/nl_1/insights?expand%5B%5D%=subscriber", "expand"],
      ["/newsletters/nl_1/articles?%5Bstatus%5D%=draft", "status"],
    ] as const;
    for (const [path, param] of refused) {
      const parsed = qs.parse(path.slice(path.indexOf("?") + 1));
      expect(Object.keys(parsed), path).toEqual([param]); // what a handler behind qs reads
      expect(judge({ path }), path).toMatchObject({ allowed: false, body: { error: { param } } });
    }
  });

  it("found by a query-parser review: a first name after another ? (??status=draft), encoded dots qs decodes as ISO-8859-1, an index of 20 and more than 20 values (objects to qs 6.17)", () => {
    // URLSearchParams and qs's ignoreQueryPrefix drop the second ?: a handler reads status
    expect(new URLSearchParams("?status=draft").get("status")).toBe("draft");
    expect(qs.parse("?status=draft", { ignoreQueryPrefix: true })).toEqual({ status: "draft" });
    for (const [path, param] of [
      ["/newsletters/nl_1/articles??status=draft", "status"],
      ["/newsletters/nl_1/articles??tag=launch", "tag"],
      ["/newsletters/nl_1/threads??visibility=private", "visibility"],
      ["/newsletters/nl_1/insights??expand=subscriber", "expand"],
      ["/newsletters/nl_1/articles??limit=-1", "limit"],
    ] as const) {
      expect(judge({ path }), path).toMatchObject({ allowed: false, body: { error: { param } } });
    }
    expect(judge({ path: "/newsletters/nl_1/articles??status=sent" }).allowed).toBe(true);
    // qs decoding as ISO-8859-1 (a client's own charset sentinel) with allowDots splits %2E in a name that is no UTF-8
    const latin1 = "utf8=%26%2310003%3B&status%2E%24ne%2E%FF=sent";
    expect(qs.parse(latin1, { allowDots: true, charsetSentinel: true })).toEqual({ status: { $ne: { ÿ: "sent" } } });
    expect(judge({ path: `/newsletters/nl_1/articles?${latin1}` })).toMatchObject({ allowed: false, status: 400, body: { error: { param: "status" } } });
    // qs 6.17's array limit: index 20, or a 21st value, makes an object keyed by index
    expect(qs.parse("status[20]=sent")).toEqual({ status: { 20: "sent" } });
    const many = Array.from({ length: 21 }, () => "status=sent").join("&");
    expect(Array.isArray(qs.parse(many).status)).toBe(false);
    for (const q of ["status[20]=sent", "visibility[20]=public", many]) {
      expect(judge({ path: `/newsletters/nl_1/articles?${q}` }), q).toMatchObject({ allowed: false, status: 400 });
    }
    expect(judge({ path: `/newsletters/nl_1/articles?${Array.from({ length: 20 }, () => "status=sent").join("&")}` }).allowed).toBe(true);
  });

  it("plain names and allowed values still pass: ?status=sent, ?[status]=sent, ?visibility[]=public", () => {
    expect(judge({ path: "/newsletters/nl_1/articles?status=sent&limit=100" }).allowed).toBe(true);
    expect(judge({ path: "/newsletters/nl_1/articles?[status]=sent" }).allowed).toBe(true);
    expect(judge({ path: "/newsletters/nl_1/threads?visibility[]=public" }).allowed).toBe(true);
    expect(judge({ path: "/newsletters/nl_1/articles?status[0]=sent&status[19]=sent&.status=sent" }).allowed).toBe(true);
  });

  it("a parsed query a handler cannot read as strings (qs nested objects) is refused 400 naming the parameter", () => {
    const query = express4Extended("status[x]=sent");
    expect(judge({ path: "/newsletters/nl_1/articles", query })).toMatchObject({ status: 400, body: { error: { code: "invalid_request", param: "status" } } });
  });
});

// Hostile query strings: brackets, encoded brackets, dots, duplicates, __proto__, +, %00, empty names, deep nesting.
const nameToken = fc.constantFrom("status", "tag", "visibility", "expand", "sta", "tus", "x", "0", "$ne", "21", "[", "]", "[]", "[0]", "%5B", "%5D", "%5b", ".", "%2E", "__proto__", "+", "%20", "%00", "=", "%3D", "%73", "[[", "]]", "&", "%", "%Z");
const valueToken = fc.constantFrom("draft", "sent", "subscriber", "public", "private", "x", ",", "%2C", "+", "%20", " ", "]=", "%00", "[", "%5D", "=");
const pair = fc.tuple(fc.array(nameToken, { minLength: 0, maxLength: 6 }), fc.option(fc.array(valueToken, { minLength: 0, maxLength: 3 }), { nil: undefined }));
const hostileQuery = fc.array(pair, { minLength: 1, maxLength: 5 }).map((pairs) => pairs.map(([name, value]) => (value === undefined ? name.join("") : `${name.join("")}=${value.join("")}`)).join("&"));
const runs = process.env.NP_DEEP ? 5000 : 300;

describe("a hostile query string never hands a handler a value the policy did not judge (property, real parsers)", () => {
  for (const [parserName, parse] of Object.entries(parsers)) {
    it(`${parserName}: a forbidden status/tag/visibility/expand value it yields was refused, from the path and from its parsed object`, async () => {
      await fc.assert(
        fc.asyncProperty(hostileQuery, fc.constantFrom(...cases), async (query, c) => {
          const parsed = await parse(query);
          const value = handed(parsed, c);
          if (value === undefined) return;
          // the host that passes only the path (no adapter) …
          const fromPath = judge({ path: `${c.path}?${query}` });
          expect(fromPath.allowed, `${parserName} hands ${c.param}=${JSON.stringify(value)} for ?${query}`).toBe(false);
          expect([400, 403]).toContain(fromPath.status);
          // … and the adapter, which passes the framework's parsed query
          const fromObject = judge({ path: c.path, query: parsed });
          expect(fromObject.allowed, `${parserName} object ${JSON.stringify(parsed)}`).toBe(false);
          expect([400, 403]).toContain(fromObject.status);
        }),
        { numRuns: runs },
      );
    });
  }
});
