/**
 * Issue 7: the default `docs_url` points at example.com in production error bodies. The default
 * stays (so `defineConfig()` with no arguments works), and a host that leaves `docsUrl` unset is
 * told once, naming the option: through its `onWarning`, or once per process on the runtime's
 * warning channel (`process.emitWarning`). Never from the `evaluate` hot path.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPolicy, defineConfig, emptyUsage, evaluate, type PolicyWarning } from "../src/index.js";
import { T0, key } from "./fixtures.js";

const FLAG = Symbol.for("newsletter-policy.warned.docs_url_default");
const flags = globalThis as Record<symbol, unknown>;

describe("docsUrl left unset: one clear warning naming the option", () => {
  const seen: Error[] = [];
  const listen = (warning: Error) => seen.push(warning);
  beforeEach(() => {
    delete flags[FLAG];
    seen.length = 0;
    process.on("warning", listen);
  });
  afterEach(() => {
    process.off("warning", listen);
    flags[FLAG] = true;
  });
  const ours = () => seen.filter((w) => w.name === "NewsletterPolicyWarning");

  it("the host's onWarning is told on every compile without docsUrl, with the option's name; never with docsUrl set", () => {
    const warnings: PolicyWarning[] = [];
    const onWarning = (w: PolicyWarning) => warnings.push(w);
    const config = defineConfig({ onWarning });
    defineConfig({ onWarning, docsUrl: "https://api.example.org/docs/errors" });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.code).toBe("docs_url_default");
    expect(warnings[0]!.message).toContain("docsUrl");
    expect(warnings[0]!.message).toContain("https://docs.example.com/errors");
    // the default still works
    expect(config.docsUrl).toBe("https://docs.example.com/errors");
  });

  it("without onWarning: once per process through process.emitWarning, however many configs are compiled", async () => {
    defineConfig();
    defineConfig({ budgets: { audience: { limit: 10 } } });
    createPolicy({ config: { caps: { dispatch: { limit: 3 } } } });
    await new Promise((resolve) => setImmediate(resolve)); // process warnings are emitted on the next tick
    expect(ours()).toHaveLength(1);
    expect(ours()[0]!.message).toContain("the docsUrl option is not set");
    expect((ours()[0] as Error & { code?: string }).code).toBe("NEWSLETTER_POLICY_DOCS_URL_DEFAULT");
  });

  it("evaluate with a compiled config never warns: the warning belongs to compiling, not to deciding", async () => {
    const config = defineConfig({ onWarning: () => {} });
    for (let i = 0; i < 50; i++) evaluate({ method: "GET", path: "/me" }, { credential: key({}, true), roles: {}, usage: emptyUsage(), now: T0, config });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ours()).toHaveLength(0);
  });

  it("a docsUrl set: no warning at all", async () => {
    defineConfig({ docsUrl: "https://api.example.org/docs/errors" });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ours()).toHaveLength(0);
  });

  it("onWarning must be a function (host mistake: PolicyConfigError naming it)", () => {
    expect(() => defineConfig({ onWarning: "log" as never })).toThrow("newsletter-policy: onWarning must be a function");
  });
});
