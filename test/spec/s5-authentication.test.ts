import { describe, expect, it } from "vitest";
import { createPolicy, credentialFromScopes, emptyUsage, evaluate, PolicyConfigError } from "../../src/index.js";
import { Session, T0, get, key, post } from "../fixtures.js";

describe("spec §5 authentication", () => {
  it("§5.1 budgets are per credential: an OAuth authorisation and an API key of one person count separately", () => {
    const config = { budgets: { audience: { limit: 1, window: 60 } } };
    const apiKey = key({ nl_1: { audience: "read" } }, false, "key_1");
    const oauth = credentialFromScopes({ id: "auth_1", scope: "audience:read", newsletters: ["nl_1"] });
    let usage = emptyUsage();
    const statuses = [apiKey, oauth, apiKey, oauth].map((credential) => {
      const r = evaluate(get("/newsletters/nl_1/subscribers"), { credential, roles: { nl_1: "owner" }, usage, now: T0, config });
      usage = r.usage;
      return r.decision.status;
    });
    expect(statuses).toEqual([200, 200, 429, 429]);
  });

  it("§5.2 a key's permissions are fixed when minted: per newsletter, and account access on or off", () => {
    const s = new Session(key({ nl_1: { content: "read" } }, true), { nl_1: "owner", nl_2: "owner" });
    expect(s.run(get("/me")).allowed).toBe(true);
    expect(s.run(get("/newsletters/nl_1/articles")).allowed).toBe(true);
    expect(s.run(get("/newsletters/nl_2/articles")).status).toBe(404); // not minted for nl_2
  });

  it("§5.3 OAuth scopes <family>:<level> and account:read are read from the token response (string or array)", () => {
    const c = credentialFromScopes({ id: "auth_1", scope: "content:write audience:read account:read unknown:scope", newsletters: ["nl_1", "nl_2"] });
    expect(c).toEqual({
      id: "auth_1",
      kind: "oauth",
      account: true,
      newsletters: { nl_1: { content: "write", audience: "read" }, nl_2: { content: "write", audience: "read" } },
    });
    const fromArray = credentialFromScopes({ id: "auth_2", scope: ["insights:read", "insights:write", "insights:read"], newsletters: ["nl_1"] });
    expect(fromArray.newsletters.nl_1).toEqual({ insights: "write" });
    expect(fromArray.account).toBe(false);
    expect(() => credentialFromScopes({ id: "", scope: "", newsletters: [] })).toThrow(PolicyConfigError);
    expect(() => credentialFromScopes({ id: "a", scope: 5 as never, newsletters: [] })).toThrow(/scope/);
  });

  it("§5.3 scope tokens are separated by a space only (RFC 6749 §3.3): a token holding other whitespace grants nothing (found by a black-box review)", () => {
    const odd = credentialFromScopes({ id: "auth_3", scope: "account:read\u00a0 audience:write\u2003sending:write content:read\tinsights:read", newsletters: ["nl_1"] });
    expect(odd.account).toBe(false);
    expect(odd.newsletters.nl_1).toEqual({});
    const spaced = credentialFromScopes({ id: "auth_4", scope: "  audience:read   account:read ", newsletters: ["nl_1"] });
    expect(spaced).toMatchObject({ account: true, newsletters: { nl_1: { audience: "read" } } });
  });

  it("§5.3 a scope is exactly <family>:<level>: one with more parts (a narrower scope of the server's) grants nothing", () => {
    // found by a black-box review: "sending:write:test" was read as sending: write (send, schedule, test-send)
    for (const scope of ["sending:write:test", "audience:write:limited", "audience:read:aggregate", "content:read:", ":content:read", "account:read:x"]) {
      const c = credentialFromScopes({ id: "auth_1", scope, newsletters: ["nl_1"] });
      expect(c.newsletters.nl_1, scope).toEqual({});
      expect(c.account, scope).toBe(false);
    }
    const array = credentialFromScopes({ id: "auth_1", scope: ["sending:write:test", "sending:read"], newsletters: ["nl_1"] });
    expect(array.newsletters.nl_1).toEqual({ sending: "read" });
    const s = new Session(credentialFromScopes({ id: "auth_1", scope: "sending:write:test", newsletters: ["nl_1"] }), { nl_1: "owner" });
    expect(s.run(post("/articles/a_1/send", { newsletter: "nl_1" })).status).toBe(403);
  });

  it("§5.3 an OAuth newsletter named __proto__ is an ordinary id, not a prototype", () => {
    const c = credentialFromScopes({ id: "auth_1", scope: "content:read", newsletters: ["__proto__"] });
    expect(Object.hasOwn(c.newsletters, "__proto__")).toBe(true);
    const s = new Session(c, { ["__proto__"]: "owner" } as never);
    expect(s.run(get("/newsletters/constructor/articles")).status).toBe(404);
  });

  it("§5.4 the credential holds the lesser of its selection and its owner's current role, on every request", () => {
    const roles: Record<string, string> = { nl_1: "owner" };
    const s = new Session(key({ nl_1: { settings: "write" } }), roles, {
      operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }],
    });
    const patch = { method: "PATCH", path: "/newsletters/nl_1/settings" };
    expect(s.run(patch).allowed).toBe(true);
    roles.nl_1 = "editor"; // narrowed: removes permissions from the existing key
    expect(s.run(patch).status).toBe(403);
    roles.nl_1 = "admin"; // widened: takes effect on the next request, without a new key
    expect(s.run(patch).allowed).toBe(true);
  });

  it("§5.4 a role never widens a key beyond what was selected", () => {
    const s = new Session(key({ nl_1: { audience: "read" } }), { nl_1: "owner" });
    expect(s.run(post("/tags/t_1/subscribers", { newsletter: "nl_1", body: { subscribers: ["s"] } })).status).toBe(403);
  });

  it("§5.4 roles may be given as a function of the newsletter, read at request time", () => {
    let role = "owner";
    const s = new Session(key({ nl_1: { settings: "write", content: "write" } }), () => role);
    expect(s.run(get("/newsletters/nl_1/articles?status=draft")).allowed).toBe(true);
    role = "reader-only";
    expect(s.run(get("/newsletters/nl_1/articles")).status).toBe(404); // an unknown role reaches nothing
  });

  it("§5.5 one credential may be allowed on one newsletter and refused on another", () => {
    const s = new Session(key({ nl_1: { audience: "read" }, nl_2: { audience: "read" } }), { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/subscribers")).allowed).toBe(true);
    const other = s.run(get("/newsletters/nl_2/subscribers")); // minted for it, but the owner has no role there now
    expect(other.status).toBe(404);
    expect(other.body?.error.code).toBe("not_found");
  });

  it("DESIGN §8 every cause of no reach gives the same answer, so that existence does not leak", () => {
    const s = new Session(key({ nl_1: { audience: "read" }, nl_2: { audience: "read" }, nl_4: { audience: "read" } }), { nl_2: "owner", nl_3: "owner", nl_4: "ghost" });
    const a = s.run(get("/newsletters/nl_1/subscribers")); // granted, no role
    const b = s.run(get("/newsletters/nl_3/subscribers")); // role, not granted
    const c = s.run(get("/newsletters/nl_4/subscribers")); // unknown role
    for (const d of [a, b, c]) expect(d.status).toBe(404);
    expect(a.body?.error.message.replace("nl_1", "X")).toBe(b.body?.error.message.replace("nl_3", "X"));
    expect([a, b, c].map((d) => (d.reason.rule === "no_reach" ? d.reason.cause : ""))).toEqual(["no_role", "not_granted", "unknown_role"]);
  });

  it("DESIGN §8 a newsletter the host resolved from an id is not named to a credential that does not reach it (existence does not leak)", () => {
    // a key of nl_2 asks about article a_9, which the host's resolver says is nl_1's: the 404 must
    // read as an unknown id's, not tell the client that a_9 exists and whose it is
    const s = new Session(key({ nl_2: { sending: "write", audience: "read" } }), { nl_2: "owner" });
    const owned = s.run({ method: "POST", path: "/articles/a_9/send", newsletter: "nl_1" });
    const unknown = s.run({ method: "POST", path: "/articles/a_8/send" });
    const subscriber = s.run({ method: "GET", path: "/subscribers/s_9", newsletter: "nl_1" });
    for (const d of [owned, unknown, subscriber]) {
      expect(d.status).toBe(404);
      expect(d.body?.error.message).toBe("The resource was not found.");
      expect(JSON.stringify(d.body)).not.toContain("nl_1");
    }
    // the host's logs still learn which newsletter it was
    expect(owned.reason).toMatchObject({ rule: "no_reach", newsletter: "nl_1", cause: "not_granted" });
    // a newsletter the client named itself is named back
    expect(s.run(get("/newsletters/nl_1/subscribers")).body?.error.message).toBe('Newsletter "nl_1" was not found for this credential.');
  });

  it("§5.6 an editor role can hold at most settings: read; an owner or admin can grant more", () => {
    const config = {
      operations: [
        { id: "settings.get", method: "GET" as const, path: "/newsletters/{newsletter}/settings", needs: "settings: read" as const },
        { id: "settings.update", method: "PATCH" as const, path: "/newsletters/{newsletter}/settings", needs: "settings: write" as const },
      ],
    };
    for (const [role, write] of [["editor", 403], ["admin", 200], ["owner", 200]] as const) {
      const s = new Session(key({ nl_1: { settings: "write" } }), { nl_1: role }, config);
      expect(s.run(get("/newsletters/nl_1/settings")).status).toBe(200);
      expect(s.run({ method: "PATCH", path: "/newsletters/nl_1/settings" }).status).toBe(write);
    }
  });

  it("§5.6 an editor keeps write in the other families", () => {
    const s = new Session(key({ nl_1: { content: "write", audience: "write", sending: "write" } }), { nl_1: "editor" });
    expect(s.run(post("/articles/a_1/send", { newsletter: "nl_1" })).allowed).toBe(true);
  });

  it("custom roles from config cap each family; a family left out is capped at none", () => {
    const s = new Session(key({ nl_1: { content: "write", insights: "write", audience: "write" } }), { nl_1: "analyst" }, {
      roles: { analyst: { content: "read", insights: "read" } },
    });
    expect(s.run(get("/newsletters/nl_1/insights")).allowed).toBe(true);
    expect(s.run(get("/newsletters/nl_1/articles")).view).toBe("reader");
    expect(s.run(get("/newsletters/nl_1/subscribers")).status).toBe(403);
  });

  // Regression (black-box audit): counters were keyed by id alone, so a key and an authorisation
  // that shared an id shared their budgets.
  it("§5.1 budgets are per API key or per OAuth authorisation: a key and an authorisation with the same id count separately", async () => {
    const apiKey = key({ nl_1: { audience: "read" } }, true, "same_id");
    const oauth = credentialFromScopes({ id: "same_id", scope: "audience:read account:read", newsletters: ["nl_1"] });
    const policy = createPolicy({ clock: () => T0 });
    await policy.check(get("/me"), { credential: apiKey, roles: {} });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), { credential: oauth, roles: { nl_1: "owner" } });
    expect(d.headers["RateLimit-Remaining"]).toBe("59");
    expect((await policy.status(oauth)).budgets.general!.remaining).toBe(599);
    expect((await policy.status(apiKey)).budgets.general!.remaining).toBe(599);
  });

  it("§5.3 a token response that names a newsletter twice is read as naming it once", () => {
    const c = credentialFromScopes({ id: "auth_1", scope: "content:read", newsletters: ["nl_1", "nl_1"] });
    expect(c.newsletters).toEqual({ nl_1: { content: "read" } });
  });
});
