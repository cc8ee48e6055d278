/**
 * A replay as text (the terminal) and as a self-contained HTML page (inline CSS and SVG, no
 * external assets, no script needed to read it).
 */
import type { PolicyConfig } from "../config.js";
import type { Comparison } from "./compare.js";
import { describeOutcome } from "./outcome.js";
import type { Replayed, ReplayResult } from "./replay.js";
import { breakdown, total, type Tally } from "./tally.js";

/** Rows of cells as an aligned text table. */
export function textTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

const HEAD = ["credential", "newsletter", "requests", "allowed", "throttled (budget)", "capped (daily cap)", "refused (why)"];

function cells(t: Tally): string[] {
  return [String(t.requests), String(t.allowed), breakdown(t.throttled), breakdown(t.capped), breakdown(t.refused)];
}

/** The summary of one replay as a text table, with a totals line. */
export function summaryText(result: ReplayResult): string {
  const rows = [HEAD, ...result.summary.map((r) => [r.credential, r.newsletter, ...cells(r)]), ["all", "", ...cells(result.totals)]];
  return textTable(rows);
}

function arrow(before: number, after: number): string {
  if (before === after) return String(before);
  const delta = after - before;
  return `${before} → ${after} (${delta > 0 ? "+" : ""}${delta})`;
}

function arrowBreakdown(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): string {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  if (names.length === 0) return "-";
  return names.map((n) => `${n} ${arrow(before[n] ?? 0, after[n] ?? 0)}`).join(", ");
}

/** Two replays compared, as text: per credential and newsletter, then the changed requests. */
export function comparisonText(comparison: Comparison, limit = 10): string {
  const rows = [
    ["credential", "newsletter", "requests", "allowed", "throttled", "capped", "refused"],
    ...comparison.rows.map((r) => [
      r.credential,
      r.newsletter,
      String(r.before.requests),
      arrow(r.before.allowed, r.after.allowed),
      arrowBreakdown(r.before.throttled, r.after.throttled),
      arrowBreakdown(r.before.capped, r.after.capped),
      total(r.before.refused) === total(r.after.refused) ? String(total(r.before.refused)) : arrow(total(r.before.refused), total(r.after.refused)),
    ]),
  ];
  const changed = comparison.changed;
  const lines = [textTable(rows), "", `${changed.length} request${changed.length === 1 ? "" : "s"} decided differently.`];
  for (const { before, after } of changed.slice(0, limit)) {
    lines.push(`  ${new Date(before.at).toISOString()}  ${before.credential}  ${before.request}: ${describeOutcome(before.outcome)} → ${describeOutcome(after.outcome)}`);
  }
  if (changed.length > limit) lines.push(`  … and ${changed.length - limit} more (--json lists them all)`);
  return lines.join("\n");
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/**
 * A timeline of budgets and caps as inline SVG: one lane per budget and daily cap, time buckets
 * across the trace, bars for requests charged (blue) and refused by that budget or cap (red).
 */
export function timelineSvg(decisions: readonly Replayed[], config: PolicyConfig, title: string): string {
  const lanes = [...Object.keys(config.budgets), "dispatch", "testSend"];
  if (decisions.length === 0) return `<p>No requests.</p>`;
  const start = decisions[0]!.at;
  const end = decisions[decisions.length - 1]!.at;
  const buckets = 60;
  const span = Math.max(1, end - start + 1);
  const index = (at: number) => Math.min(buckets - 1, Math.floor(((at - start) / span) * buckets));
  const counted = lanes.map(() => new Array<number>(buckets).fill(0));
  const refused = lanes.map(() => new Array<number>(buckets).fill(0));
  for (const d of decisions) {
    const b = index(d.at);
    for (const name of d.charged) counted[lanes.indexOf(name)]![b]!++;
    for (const name of d.spent) refused[lanes.indexOf(name)]![b]!++;
    for (const cap of d.caps) (d.outcome.kind === "capped" ? refused : counted)[lanes.indexOf(cap)]![b]!++;
  }
  const laneHeight = 56;
  const left = 90;
  const width = 900;
  const barWidth = (width - left - 10) / buckets;
  const height = lanes.length * laneHeight + 30;
  const parts: string[] = [];
  lanes.forEach((lane, i) => {
    const top = i * laneHeight + 8;
    const max = Math.max(1, ...counted[i]!.map((c, j) => c + refused[i]![j]!));
    parts.push(`<text x="4" y="${top + laneHeight / 2}" class="lane">${escapeHtml(lane)}</text>`);
    parts.push(`<line x1="${left}" x2="${width - 10}" y1="${top + laneHeight - 10}" y2="${top + laneHeight - 10}" class="axis"/>`);
    for (let j = 0; j < buckets; j++) {
      const c = counted[i]![j]!;
      const r = refused[i]![j]!;
      if (c + r === 0) continue;
      const x = (left + j * barWidth).toFixed(1);
      const scale = (laneHeight - 16) / max;
      const hc = c * scale;
      const hr = r * scale;
      const base = top + laneHeight - 10;
      const from = new Date(start + (j * span) / buckets).toISOString().slice(11, 19);
      const tip = `<title>${escapeHtml(lane)} from ${from}: ${c} charged, ${r} refused</title>`;
      if (c > 0) parts.push(`<rect x="${x}" y="${(base - hc).toFixed(1)}" width="${(barWidth - 1).toFixed(1)}" height="${hc.toFixed(1)}" class="counted">${tip}</rect>`);
      if (r > 0) parts.push(`<rect x="${x}" y="${(base - hc - hr).toFixed(1)}" width="${(barWidth - 1).toFixed(1)}" height="${hr.toFixed(1)}" class="refused">${tip}</rect>`);
    }
  });
  const label = (at: number) => new Date(at).toISOString().slice(0, 16).replace("T", " ");
  parts.push(`<text x="${left}" y="${height - 6}" class="tick">${label(start)} UTC</text>`);
  parts.push(`<text x="${width - 10}" y="${height - 6}" class="tick" text-anchor="end">${label(end)} UTC</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${escapeHtml(title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${parts.join("")}</svg>`;
}

function tallyCells(t: Tally): string {
  return [t.requests, t.allowed, breakdown(t.throttled), breakdown(t.capped), breakdown(t.refused)].map((c) => `<td>${escapeHtml(String(c))}</td>`).join("");
}

/** The summary table of one replay, with machine-readable `data-*` totals. */
function summaryHtml(result: ReplayResult, id: string): string {
  const t = result.totals;
  const rows = result.summary
    .map((r) => `<tr data-credential="${escapeHtml(r.credential)}" data-newsletter="${escapeHtml(r.newsletter)}" data-allowed="${r.allowed}"><td>${escapeHtml(r.credential)}</td><td>${escapeHtml(r.newsletter)}</td>${tallyCells(r)}</tr>`)
    .join("\n");
  return `<table id="${id}" data-requests="${t.requests}" data-allowed="${t.allowed}" data-throttled="${total(t.throttled)}" data-capped="${total(t.capped)}" data-refused="${total(t.refused)}">
<thead><tr>${HEAD.map((h) => `<th>${h}</th>`).join("")}</tr></thead>
<tbody>
${rows}
</tbody>
<tfoot><tr><th>all</th><th></th>${tallyCells(t)}</tr></tfoot>
</table>`;
}

/** Inputs of {@link reportHtml}. */
export interface ReportInput {
  readonly trace: string;
  readonly configName: string;
  readonly config: PolicyConfig;
  readonly result: ReplayResult;
  readonly other?: { readonly configName: string; readonly config: PolicyConfig; readonly result: ReplayResult; readonly comparison: Comparison };
}

/** The whole report page: self-contained HTML (inline CSS and SVG; no scripts, fonts or images). */
export function reportHtml(input: ReportInput): string {
  const { result, other } = input;
  const sections = [
    `<h2>${escapeHtml(input.configName)}</h2>`,
    summaryHtml(result, "summary"),
    `<h3>Budgets and daily caps over time</h3>`,
    `<figure id="timeline">${timelineSvg(result.decisions, input.config, `Timeline with ${input.configName}`)}</figure>`,
  ];
  if (other !== undefined) {
    sections.push(
      `<h2>${escapeHtml(other.configName)}</h2>`,
      summaryHtml(other.result, "summary-compare"),
      `<h3>Budgets and daily caps over time</h3>`,
      `<figure id="timeline-compare">${timelineSvg(other.result.decisions, other.config, `Timeline with ${other.configName}`)}</figure>`,
      `<h2>Decided differently</h2>`,
      `<p id="changed" data-count="${other.comparison.changed.length}">${other.comparison.changed.length} of ${result.totals.requests} requests.</p>`,
      `<table><thead><tr><th>time</th><th>credential</th><th>request</th><th>${escapeHtml(input.configName)}</th><th>${escapeHtml(other.configName)}</th></tr></thead><tbody>`,
      ...other.comparison.changed
        .slice(0, 200)
        .map(({ before, after }) => `<tr><td>${new Date(before.at).toISOString()}</td><td>${escapeHtml(before.credential)}</td><td>${escapeHtml(before.request)}</td><td>${escapeHtml(describeOutcome(before.outcome))}</td><td>${escapeHtml(describeOutcome(after.outcome))}</td></tr>`),
      `</tbody></table>`,
    );
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Replay of ${escapeHtml(input.trace)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
tfoot th, tfoot td { font-weight: bold; }
svg .lane, svg .tick { font: 12px system-ui, sans-serif; fill: #444; }
svg .axis { stroke: #999; }
svg .counted { fill: #6b8fd6; }
svg .refused { fill: #d64545; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; }
</style>
</head>
<body>
<h1>Replay of ${escapeHtml(input.trace)}</h1>
<p class="legend">Per time bucket: <span style="background:#6b8fd6"></span>requests charged to the budget or counted toward the cap <span style="background:#d64545"></span>requests refused by it</p>
${sections.join("\n")}
</body>
</html>
`;
}
