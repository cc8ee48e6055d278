import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPolicy, emptyUsage, evaluate, MemoryStore, type Decision, type PolicyRequest } from "../../src/index.js";
import { arbConfig, arbCredential, arbRequest, arbRoles, arbUntrustedRequest, EXTRA_OPERATIONS } from "../../src/testing/index.js";
import { OPERATIONS } from "./model.js";
import { TIMEOUT, params } from "./settings.js";

const STATUSES = [200, 400, 403, 404, 409, 429];

function wellFormed(d: Decision): void {
  expect(STATUSES).toContain(d.status);
  expect(d.allowed).toBe(d.status === 200);
  expect(d.body === undefined).toBe(d.allowed);
  expect(d.requestId).toMatch(/^req_/);
  expect(d.headers["RateLimit-Policy"]).toBeTypeOf("string");
  expect(d.headers["RateLimit-Remaining"]).toMatch(/^[0-9]+$/);
}

/** What a decision says, without the wording of its message (which quotes the raw path). */
const gist = (d: Decision) => ({ status: d.status, code: d.body?.error.code, param: d.body?.error.param, allowed: d.body?.error.allowed_values, headers: d.headers, charged: d.charged, operation: d.operation, view: d.view });

describe("invariants: untrusted descriptors (DESIGN §10)", () => {
  it("descriptors of any shape (fc.anything(), odd paths, wrong types) never throw, through evaluate or createPolicy, and get a well-formed decision", async () => {
    await fc.assert(
      fc.asyncProperty(arbUntrustedRequest(), arbCredential(), arbRoles(), arbConfig(), async (request, credential, roles, config) => {
        const { decision } = evaluate(request as PolicyRequest, { credential, roles, usage: emptyUsage(), now: Date.UTC(2027, 0, 1), config });
        wellFormed(decision);
        const policy = createPolicy({ store: new MemoryStore(), config, clock: () => Date.UTC(2027, 0, 1) });
        wellFormed(await policy.check(request as PolicyRequest, { credential, roles }));
      }),
      params(5),
    );
  }, TIMEOUT);

  it("dot segments, encoded slashes and bad percent-encoding never reach an operation: 400 naming path", () => {
    const bad = fc.constantFrom("..", ".", "%2e%2e", "%2E", "a%2Fb", "a%5Cb", "%E0%A4%A", "%", "%00");
    fc.assert(
      fc.property(arbRequest(), bad, fc.nat(), arbCredential(), arbRoles(), (generated, segment, at, credential, roles) => {
        const [path, query] = generated.request.path.split("?") as [string, string | undefined];
        const parts = path.split("/");
        parts.splice(1 + (at % (parts.length - 1)), 0, segment);
        const request = { ...generated.request, path: parts.join("/") + (query === undefined ? "" : `?${query}`) };
        const { decision } = evaluate(request as PolicyRequest, { credential, roles, usage: emptyUsage(), now: 0 });
        expect(decision.status, request.path).toBe(400);
        expect(decision.body?.error.param).toBe("path");
        expect(decision.operation).toBeUndefined();
      }),
      params(5),
    );
  }, TIMEOUT);

  it("percent-encoded path ids decide like the plain ones", () => {
    const encodeAll = (s: string) => [...new TextEncoder().encode(s)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
    fc.assert(
      fc.property(arbRequest(), arbCredential(), arbRoles(), (generated, credential, roles) => {
        const op = generated.operation === undefined ? undefined : OPERATIONS.get(generated.operation);
        if (op === undefined) return;
        const [path, query] = generated.request.path.split("?") as [string, string | undefined];
        const template = op.path.split("/");
        const encoded = path
          .split("/")
          .map((segment, i) => (template[i]?.startsWith("{") ? encodeAll(decodeURIComponent(segment)) : segment))
          .join("/");
        const state = { credential, roles, usage: emptyUsage(), now: 0, config: { budgets: { exports: { limit: 5, window: 60 } }, operations: [...EXTRA_OPERATIONS] } };
        const plain = evaluate(generated.request, state).decision;
        const other = evaluate({ ...generated.request, path: encoded + (query === undefined ? "" : `?${query}`) }, state).decision;
        expect(gist(other), encoded).toEqual(gist(plain));
      }),
      params(5),
    );
  }, TIMEOUT);

  it("repeated, comma-separated and bracketed (name[], name[0]) query values decide alike, as a query string or a query object", () => {
    const values = fc.array(fc.constantFrom("sent", "draft", "scheduled", "public", "private", "subscriber", "t_1"), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(
        fc.constantFrom("/newsletters/nl_1/articles", "/newsletters/nl_1/threads", "/newsletters/nl_1/insights"),
        fc.constantFrom("status", "visibility", "tag", "expand"),
        values,
        arbCredential(),
        arbRoles(),
        (path, name, list, credential, roles) => {
          const forms: PolicyRequest[] = [
            { method: "GET", path: `${path}?${list.map((v) => `${name}=${v}`).join("&")}` },
            { method: "GET", path: `${path}?${name}=${list.join(",")}` },
            { method: "GET", path: `${path}?${name}=${encodeURIComponent(list.join(", "))}` },
            { method: "GET", path, query: { [name]: list } },
            { method: "GET", path, query: { [name]: list.join(",") } },
            // qs-style names are the same parameter to Express and Fastify (spec §7 #4–#7 must hold for them)
            { method: "GET", path: `${path}?${list.map((v) => `${name}[]=${v}`).join("&")}` },
            { method: "GET", path: `${path}?${list.map((v, i) => `${name}%5B${i}%5D=${v}`).join("&")}` },
            { method: "GET", path, query: { [`${name}[]`]: list } },
          ];
          const [first, ...rest] = forms.map((request) => gist(evaluate(request, { credential, roles, usage: emptyUsage(), now: 0 }).decision));
          for (const other of rest) expect(other).toEqual(first);
        },
      ),
      params(5),
    );
  }, TIMEOUT);

  it("a query name qs may read as an object under its parent (name[key], name.key) is never allowed: refused 400 naming the parent where the same request without the query is allowed, else as that request is (DESIGN §1: reach and permission come before input), as a query string or a query object", () => {
    // status[$ne]=sent is { status: { $ne: "sent" } } to qs: an operator, not the value "sent" (found by a black-box review)
    const key = fc.oneof(fc.constantFrom("$ne", "$in", "not", "x", "21", "01", "-1", ""), fc.string({ minLength: 1, maxLength: 4 }));
    const shape = fc.constantFrom((n: string, k: string) => `${n}[${k}]x`, (n: string, k: string) => `${n}.${k}`, (n: string, k: string) => `${n}[${k}][]`, (n: string, k: string) => `[${n}][${k}]x`);
    fc.assert(
      fc.property(
        fc.constantFrom("/newsletters/nl_1/articles", "/newsletters/nl_1/threads", "/newsletters/nl_1/insights", "/newsletters/nl_1/subscribers"),
        fc.constantFrom("status", "visibility", "tag", "expand", "limit"),
        key,
        shape,
        fc.constantFrom("sent", "public", "1", "author"),
        arbCredential(),
        arbRoles(),
        (path, name, k, spell, value, credential, roles) => {
          const qsName = spell(name, k);
          const plain = evaluate({ method: "GET", path }, { credential, roles, usage: emptyUsage(), now: 0 }).decision;
          for (const request of [
            { method: "GET", path: `${path}?${encodeURIComponent(qsName)}=${value}` },
            { method: "GET", path: `${path}?${qsName.replace(/&|=|#|%|\+/g, encodeURIComponent)}=${value}` },
            { method: "GET", path, query: { [qsName]: value } },
          ] satisfies PolicyRequest[]) {
            const d = evaluate(request, { credential, roles, usage: emptyUsage(), now: 0 }).decision;
            const expected = plain.allowed ? { status: 400, code: "invalid_request", param: name } : { status: plain.status, code: plain.body?.error.code, param: plain.body?.error.param };
            expect(d.allowed, `${request.path} ${JSON.stringify(request)}`).toBe(false);
            expect({ status: d.status, code: d.body?.error.code, param: d.body?.error.param }, `${request.path} ${JSON.stringify(request)}`).toEqual(expected);
          }
        },
      ),
      params(5),
    );
  }, TIMEOUT);
});
