/// <reference lib="dom" />
/**
 * The playground page's script: reads the form, decides the request with the library's built
 * bundle, and renders the decision, headers, reason and the credential's permitted operations.
 * Built into docs/playground/playground.js by `npm run build:playground`.
 */
import { defineConfig, emptyUsage, evaluate, permitted, type Credential, type Decision, type Family, type Level, type PolicyRequest } from "../../dist/index.js";
import { reasonInWords } from "../../src/cli/words.js";

const FAMILIES: Family[] = ["content", "audience", "sending", "insights", "settings", "webhooks"];
const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const value = (id: string) => byId<HTMLInputElement>(id).value;

function setUp(): void {
  const grants = byId<HTMLFieldSetElement>("grants");
  const account = grants.querySelector("label:last-of-type")!;
  for (const family of FAMILIES) {
    const label = document.createElement("label");
    label.innerHTML = `<span>${family}</span><select id="grant-${family}"><option>none</option><option>read</option><option>write</option></select>`;
    grants.insertBefore(label, account);
  }
  byId<HTMLSelectElement>("grant-content").value = "read";
  byId<HTMLSelectElement>("grant-insights").value = "read";
}

function credential(): Credential {
  const grants: Partial<Record<Family, Level>> = {};
  for (const family of FAMILIES) {
    const level = value(`grant-${family}`) as Level;
    if (level !== "none") grants[family] = level;
  }
  return { id: "playground_key", kind: value("kind") as Credential["kind"], account: byId<HTMLInputElement>("account").checked, newsletters: { nl_1: grants } };
}

function request(): PolicyRequest {
  const out: PolicyRequest = { method: value("method"), path: value("path") };
  if (value("newsletter") !== "") out.newsletter = value("newsletter");
  if (value("idempotencyKey") !== "") out.idempotencyKey = value("idempotencyKey");
  if (value("body").trim() !== "") out.body = JSON.parse(value("body"));
  return out;
}

function render(): void {
  const error = byId("error");
  error.textContent = "";
  let decision: Decision;
  let config;
  const roles: Record<string, string> = value("role") === "" ? {} : { nl_1: value("role") };
  const who = { credential: credential(), roles };
  try {
    config = defineConfig(JSON.parse(value("config") || "{}"));
    const times = Math.max(1, Math.min(1000, Number(value("times")) || 1));
    let usage = emptyUsage();
    const now = Date.UTC(2026, 10, 23, 10, 0, 0);
    const req = request();
    let result!: ReturnType<typeof evaluate>;
    for (let i = 0; i < times; i++) {
      result = evaluate(req, { ...who, usage, now, config });
      usage = result.usage;
    }
    decision = result.decision;
  } catch (e) {
    // a host mistake (config) or unreadable JSON in the form: say so, keep the last answer
    error.textContent = e instanceof Error ? e.message : String(e);
    return;
  }
  const d = byId("decision");
  d.className = decision.allowed ? "allowed" : "refused";
  d.textContent = `${decision.status} ${decision.allowed ? "allowed" : decision.body.error.code}${decision.operation ? ` — ${decision.operation}` : ""}`;
  d.dataset.status = String(decision.status);
  byId("reason").textContent = reasonInWords(decision);
  byId("headers").textContent = Object.entries(decision.headers)
    .map(([name, v]) => `${name}: ${v}`)
    .join("\n");
  byId("body-out").textContent = decision.body === undefined ? "(none: the request goes on)" : JSON.stringify(decision.body, null, 2);

  const p = permitted(who, "nl_1", config);
  byId("view").textContent = p.view === undefined ? "It does not reach nl_1." : `View: ${p.view}${p.view === "reader" ? " (read-only: no unpublished content)" : ""}.`;
  const body = byId("permitted").querySelector("tbody")!;
  body.replaceChildren(
    ...p.operations.map((op) => {
      const tr = document.createElement("tr");
      tr.dataset.operation = op.id;
      const cells = [op.id, `${op.method} ${op.path}`, op.allowed ? "yes" : `${op.refusal!.status} ${op.refusal!.code}${op.refusal!.needs ? ` (needs ${op.refusal!.needs})` : ""}`];
      for (const text of cells) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      tr.lastElementChild!.className = op.allowed ? "yes" : "no";
      return tr;
    }),
  );
}

setUp();
byId("inputs").addEventListener("input", render);
byId("inputs").addEventListener("change", render);
render();
