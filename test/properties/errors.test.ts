import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Decision } from "../../src/index.js";
import { arbTrace, runPureTrace } from "../../src/testing/index.js";
import { OPERATIONS, requests } from "./model.js";
import { TIMEOUT, TRACE, params } from "./settings.js";

const STATUS_OF: Record<string, number> = { invalid_request: 400, insufficient_scope: 403, not_found: 404, conflict: 409, rate_limited: 429 };

/** spec §2 and §7's table (DESIGN §10, §13: param also names the field of invalid_request and conflict). */
function expectedFields(d: Decision): { param: boolean | string; allowed: boolean | "non-empty" } {
  const r = d.reason;
  if (r.rule === "insufficient_scope") {
    switch (r.case) {
      case 1:
      case 2:
      case 3:
        return { param: false, allowed: "non-empty" }; // allowed_values holds the needed permission
      case 4:
        return { param: "status", allowed: "non-empty" };
      case 5:
        return { param: "tag", allowed: false }; // #5: allowed_values left out
      case 6:
        return { param: "visibility", allowed: "non-empty" };
      case 7:
        return { param: "expand", allowed: true }; // #7: the expandable paths, or left out when none
    }
  }
  if (r.rule === "invalid_input" || r.rule === "malformed_request") return { param: r.param, allowed: false };
  if (r.rule === "idempotency_conflict") return { param: "Idempotency-Key", allowed: false };
  return { param: false, allowed: false };
}

describe("invariants: error bodies (spec §2 error object, §7)", () => {
  it("every refusal has a body with exactly the spec's fields: code, message, request_id req_…, docs_url <base>/<code>, and param/allowed_values exactly when the table says", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        const base = (trace.config.docsUrl ?? "https://docs.example.com/errors").replace(/\/+$/, "");
        for (const entry of requests(runPureTrace(trace))) {
          const d = entry.decision;
          if (d.allowed) {
            expect(d.body).toBeUndefined();
            expect(d.status).toBe(200);
            continue;
          }
          expect(Object.keys(d.body)).toEqual(["error"]);
          const e = d.body.error;
          const want = expectedFields(d);
          const keys = ["code", "message", "request_id", "docs_url", ...(want.param === false ? [] : ["param"]), ...(want.allowed === false ? [] : ["allowed_values"])];
          if (want.allowed === true && e.allowed_values === undefined) keys.pop();
          expect(Object.keys(e).sort(), `${d.status} ${d.reason.rule}`).toEqual(keys.sort());
          expect(d.status).toBe(STATUS_OF[e.code]);
          expect(e.request_id).toMatch(/^req_[A-Za-z0-9._:-]+$/);
          expect(e.request_id).toBe(d.requestId);
          expect(e.docs_url).toBe(`${base}/${e.code}`);
          expect(e.message.length).toBeGreaterThan(0);
          if (typeof want.param === "string") expect(e.param).toBe(want.param);
          if (e.allowed_values !== undefined) {
            expect(e.allowed_values.length).toBeGreaterThan(0);
            expect(e.allowed_values.every((v) => typeof v === "string")).toBe(true);
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("allowed_values carries the needed permission (#1–#3), the values a reader may send (#4, #6), or the paths it may expand (#7)", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const r = entry.decision.reason;
          if (r.rule !== "insufficient_scope") continue;
          const e = entry.decision.body!.error;
          const op = OPERATIONS.get(entry.operation!)!;
          if (r.case <= 3) expect(e.allowed_values).toEqual([r.needed]);
          if (r.case === 4 || r.case === 6) expect(e.allowed_values).toEqual(op.filters![r.param!]!.reader);
          if (r.case === 7) for (const path of e.allowed_values ?? []) expect(Object.keys(op.expand!)).toContain(path);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("the message names what is involved: the spent budget, the daily limit, the needed permission and what the credential holds", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const d = entry.decision;
          if (d.allowed) continue;
          const message = d.body.error.message;
          const r = d.reason;
          if (r.rule === "budget_spent") expect(message).toContain(r.budget);
          if (r.rule === "daily_cap") expect(message).toContain("daily limit");
          if (r.rule === "insufficient_scope") {
            expect(message).toContain(r.needed.split(":")[0]!);
            if (r.case === 1 || r.case === 2) expect(message).toContain(r.needed);
            if (r.case !== 3) expect(message).toContain(r.held.length === 0 ? "nothing" : r.held[0]!);
            if (r.case === 3) expect(message).toContain("account: read");
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);
});
