/**
 * The permission table (Markdown) of a config: docs/permissions.md for the default config, and the
 * CLI's `permissions` command for a host's. One generator, so the docs cannot drift from the code.
 */
import { defineConfig, resolveConfig, type PolicyConfig } from "../config.js";

const BUILT_IN_ROLE_NOTE = "owner and admin: every family up to `write`. editor: every family up to `write` except `settings`, capped at `read` (spec §5.6).";

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

/**
 * The Markdown of docs/permissions.md for a config.
 *
 * @param config - default: the spec's.
 * @returns the whole page, ending with a newline.
 */
/**
 * The same table as data, for `permissions --json`: every operation with what it needs and is
 * charged, the budgets, the caps and the role caps.
 */
export function permissionData(config: PolicyConfig = defineConfig()): unknown {
  const compiled = resolveConfig(config);
  return {
    operations: compiled.operations.map((op) => {
      const spec = op.spec;
      return {
        id: op.id,
        method: spec.method,
        path: spec.path,
        needs: op.needs ?? null,
        budgets: op.budgets.map((b) => b.name),
        cap: spec.cap ?? null,
        readerFilters: Object.fromEntries(Object.entries(spec.filters ?? {}).map(([name, rule]) => [name, [...rule.reader]])),
        expand: { ...(spec.expand ?? {}) },
        ...(spec.list && { list: { field: spec.list.field, min: spec.list.min, max: spec.list.max } }),
        paginated: spec.paginated === true,
      };
    }),
    budgets: compiled.budgets.map((b) => ({ name: b.name, limit: b.limit, window: b.window })),
    caps: { dispatch: config.caps.dispatch.limit, testSend: config.caps.testSend.limit },
    roles: Object.fromEntries([...compiled.roles].map(([name, caps]) => [name, { ...caps }])),
  };
}

/**
 * Where a permission table goes: the repository's `docs/permissions.md` (`docs: true`, generated,
 * links relative), or a terminal (the CLI: `configFile` when a config of the host's is shown; links
 * name the page in the installed package).
 */
export interface TableTarget {
  readonly docs?: boolean;
  readonly configFile?: string;
}

export function permissionTable(config: PolicyConfig = defineConfig(), target: TableTarget = {}): string {
  const compiled = resolveConfig(config);
  // the CLI's table is the host's config (it said "the default catalogue" and "do not edit by hand",
  // and linked decisions.md beside a page that is not there; found by a new-user review)
  const decision = (n: number) => (target.docs === true ? `[decision ${n}](decisions.md)` : `decision ${n} (node_modules/newsletter-policy/docs/decisions.md)`);
  const head =
    target.docs === true
      ? "<!-- Generated from the operation catalogue by `npm run docs:permissions`; do not edit by hand. -->\n"
      : "";
  const known = target.configFile === undefined ? "the default catalogue knows" : `the config in ${target.configFile} knows`;
  const rows = compiled.operations.map((op) => {
    const spec = op.spec;
    const filters = Object.entries(spec.filters ?? {})
      .map(([name, rule]) => (rule.reader.length === 0 ? `\`${name}\`: not for read-only` : `\`${name}\`: read-only may use ${rule.reader.map((v) => `\`${v}\``).join(", ")}`))
      .join("; ");
    const expand = Object.entries(spec.expand ?? {})
      .map(([path, need]) => `\`${path}\` (+ \`${need}\`)`)
      .join(", ");
    const limits = [spec.list ? `\`${spec.list.field}\`: ${spec.list.min}–${spec.list.max} ${spec.list.items}` : "", spec.paginated ? "`limit`: positive integer" : ""]
      .filter(Boolean)
      .join("; ");
    const cap = spec.cap === undefined ? "" : spec.cap === "dispatch" ? `dispatch (${config.caps.dispatch.limit}/day per newsletter)` : `test send (${config.caps.testSend.limit}/day per credential)`;
    return `| \`${op.id}\` | ${spec.method} | \`${spec.path}\` | ${op.needs ? `\`${op.needs}\`` : "a credential"} | ${op.budgets.map((b) => `\`${b.name}\``).join(", ")} | ${cap} | ${cell(filters)} | ${cell(expand)} | ${cell(limits)} |`;
  });
  const budgets = compiled.budgets.map((b) => `| \`${b.name}\` | ${b.limit} | ${b.window} s |`);
  return `${head}# Permission table

Every operation ${known}, what it needs, and what it is charged. Hosts add
operations with \`defineConfig({ operations: [...] })\`; anything not listed here is refused with
\`not_found\` (fail closed, ${decision(11)}).

| operation | method | path | needs | budgets | daily cap | read-only filters (spec §7 #4–#6) | expand (spec §7 #7) | input limits (400) |
|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}

Every operation is charged to \`general\`; every method other than GET is also charged to \`write\`
(spec §6: a request that changes something may publish an event).

## Budgets (spec §8 defaults)

| budget | limit | window |
|---|---|---|
${budgets.join("\n")}

## Role caps (spec §5.4, §5.6)

The effective level of each family is the lesser of what the credential was granted and what its
owner's current role allows, on every request. ${BUILT_IN_ROLE_NOTE} Hosts add roles with
\`defineConfig({ roles: { analyst: { content: "read", insights: "read" } } })\`; a family a role leaves
out is capped at \`none\`.

## Permissions the spec leaves unstated (defaults, configurable)

| operation | default | why |
|---|---|---|
| \`events.list\` | \`audience: read\` | events return recipient addresses (spec §8 lists them among the reads that do) |
| \`tags.subscribers.add\` | \`audience: write\` | tagging changes the audience |
| \`articles.testSend\` | \`sending: write\` | a test send mails people, like a send |

A host changes one by giving an operation with its id in \`defineConfig({ operations })\`, e.g.
\`{ id: "events.list", method: "GET", path: "/newsletters/{newsletter}/events", needs: "insights: read" }\`:
what the entry leaves out stays the built-in's, and it may add budgets. Every other built-in
permission, and what the spec states of any built-in operation (its method and path, budgets, daily
cap, reader filters, expand paths, pagination and list bound), cannot be changed that way: such an
entry throws \`PolicyConfigError\` naming the field.

## Permissions the spec states by its words, or DESIGN decides (fixed)

| operation | permission | from |
|---|---|---|
| \`articles.list\`, \`threads.list\` | \`content: read\` | ${decision(9)} |
| \`subscribers.get\` | \`audience: read\` | spec §4: reading subscribers needs \`audience: read\` |
| \`articles.create\`, \`articles.update\`, \`articles.replace\` | \`content: write\` | spec §4: operations that create or edit articles |
`;
}
