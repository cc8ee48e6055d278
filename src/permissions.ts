/**
 * The permission model of spec §2 and §5: per-newsletter grants in six families, none < read <
 * write, capped on every request by the owner's current role.
 */
import type { Family, GrantedLevel, Grants, Level, Requirement } from "./types.js";

/** The six families, in the spec's order (spec §2). */
export const FAMILIES: readonly Family[] = ["content", "audience", "sending", "insights", "settings", "webhooks"];
/** The levels, lowest first. */
export const LEVELS: readonly Level[] = ["none", "read", "write"];


/** A credential's effective levels on one newsletter: the lesser of grant and role cap per family. */
export type Effective = Readonly<Record<Family, Level>>;

/** A requirement parsed: `account` or a family with the level it needs. */
export type ParsedRequirement = { readonly account: true } | { readonly account: false; readonly family: Family; readonly level: GrantedLevel };

const parsed = new Map<string, ParsedRequirement>();
for (const family of FAMILIES) {
  for (const level of ["read", "write"] as const) parsed.set(`${family}: ${level}`, { account: false, family, level });
}
parsed.set("account: read", { account: true });

/** Reads `"<family>: <level>"` or `"account: read"`; null when it is neither. */
export function parseRequirement(text: unknown): Requirement | null {
  return typeof text === "string" && parsed.has(text) ? (text as Requirement) : null;
}

/** The parts of a requirement already known to be valid. */
export function requirementParts(requirement: Requirement): ParsedRequirement {
  return parsed.get(requirement)!;
}

/** A level read from untrusted data: anything but `read`/`write` counts as `none` (fail closed). */
function levelOf(value: unknown): Level {
  return value === "read" || value === "write" ? value : "none";
}

/** The lesser of two levels. */
export function lesser(a: Level, b: Level): Level {
  return a === b || a === "none" || b === "write" ? a : b;
}

/** Whether `held` satisfies `needed`: write includes read (spec §2). */
export function satisfies(held: Level, needed: GrantedLevel): boolean {
  return levelDigit(held) >= levelDigit(needed);
}

/** Whether a credential with these levels (and `account: read` or not) meets a requirement. */
export function holds(requirement: Requirement, levels: Effective, account: boolean): boolean {
  const need = requirementParts(requirement);
  return need.account ? account : satisfies(levels[need.family], need.level);
}

const hasOwnProperty = Object.prototype.hasOwnProperty;
/** Grants that grant nothing (a credential without grants on the newsletter). */
const NO_GRANTS: Grants = Object.freeze({});

/**
 * A grant as read for {@link effectiveLevels}: `value` (the grants' property of that name) when it is
 * `read` or `write` and the grants' own, else `none`. The value is tested first, so a family that is
 * not granted (most are) costs no own-property test. The one rule of a grant ({@link grantedLevel}
 * reads a family through it); {@link effectiveLevels} hands it each family's value by name.
 */
function ownLevel(grants: Grants, family: Family, value: unknown): Level {
  const level = levelOf(value);
  return level !== "none" && hasOwnProperty.call(grants, family) ? level : "none";
}

/**
 * Effective levels (spec §5.4): per family, the lesser of what was selected at creation and what
 * the owner's current role allows.
 */
export function effectiveLevels(grants: Grants | undefined, cap: Readonly<Record<Family, Level>>): Effective {
  const g = grants ?? NO_GRANTS;
  // one literal, so every result has one shape (a loop of keyed stores built it field by field)
  return {
    content: lesser(ownLevel(g, "content", g.content), cap.content),
    audience: lesser(ownLevel(g, "audience", g.audience), cap.audience),
    sending: lesser(ownLevel(g, "sending", g.sending), cap.sending),
    insights: lesser(ownLevel(g, "insights", g.insights), cap.insights),
    settings: lesser(ownLevel(g, "settings", g.settings), cap.settings),
    webhooks: lesser(ownLevel(g, "webhooks", g.webhooks), cap.webhooks),
  };
}

/** A level's rank, lowest first, and its digit in {@link levelsCode}: none 0, read 1, write 2. */
export function levelDigit(level: Level): number {
  return level === "write" ? 2 : level === "read" ? 1 : 0;
}

/** Six levels, in the spec's order, as one number (a base-3 digit each): equal numbers, equal levels. */
function code(content: Level, audience: Level, sending: Level, insights: Level, settings: Level, webhooks: Level): number {
  return ((((levelDigit(content) * 3 + levelDigit(audience)) * 3 + levelDigit(sending)) * 3 + levelDigit(insights)) * 3 + levelDigit(settings)) * 3 + levelDigit(webhooks);
}

/** Effective levels as one number ({@link code}); the six families read by name, not by a keyed load in a loop. */
export function levelsCode(levels: Effective): number {
  return code(levels.content, levels.audience, levels.sending, levels.insights, levels.settings, levels.webhooks);
}

/** {@link effectiveLevels} as one number ({@link code}): `levelsCode(effectiveLevels(grants, cap))`, without the object. */
export function effectiveCode(grants: Grants | undefined, cap: Readonly<Record<Family, Level>>): number {
  const g = grants ?? NO_GRANTS;
  return code(
    lesser(ownLevel(g, "content", g.content), cap.content),
    lesser(ownLevel(g, "audience", g.audience), cap.audience),
    lesser(ownLevel(g, "sending", g.sending), cap.sending),
    lesser(ownLevel(g, "insights", g.insights), cap.insights),
    lesser(ownLevel(g, "settings", g.settings), cap.settings),
    lesser(ownLevel(g, "webhooks", g.webhooks), cap.webhooks),
  );
}

/** The raw grants on one newsletter (each family as {@link grantedLevel} reads it) as one number ({@link code}). */
export function grantsCode(grants: Grants | undefined): number {
  const g = grants ?? NO_GRANTS;
  return code(
    ownLevel(g, "content", g.content),
    ownLevel(g, "audience", g.audience),
    ownLevel(g, "sending", g.sending),
    ownLevel(g, "insights", g.insights),
    ownLevel(g, "settings", g.settings),
    ownLevel(g, "webhooks", g.webhooks),
  );
}

/** The raw grant on one family, for spec §7 #2 (minted with the family, capped by the role now). */
export function grantedLevel(grants: Grants | undefined, family: Family): Level {
  return grants === undefined ? "none" : ownLevel(grants, family, grants[family]);
}

/** Spec §5.7: read-only = holds no `write` in any family on that newsletter, after the cap. */
export function isReadOnly(levels: Effective): boolean {
  // the six families by name (a loop over FAMILIES read each by a keyed load)
  return (
    levels.content !== "write" &&
    levels.audience !== "write" &&
    levels.sending !== "write" &&
    levels.insights !== "write" &&
    levels.settings !== "write" &&
    levels.webhooks !== "write"
  );
}

/** `<family>: <level>` of every family and granted level, written once. */
const HELD = Object.fromEntries(FAMILIES.map((f) => [f, { read: `${f}: read`, write: `${f}: write` }])) as Record<Family, Record<GrantedLevel, Requirement>>;

/** What the credential holds, in `<family>: <level>` form, for messages (spec §7). */
export function heldPermissions(levels: Effective): string[] {
  // the six families by name, in FAMILIES order (a loop over FAMILIES read each by a keyed load)
  const held: string[] = [];
  if (levels.content !== "none") held.push(HELD.content[levels.content]);
  if (levels.audience !== "none") held.push(HELD.audience[levels.audience]);
  if (levels.sending !== "none") held.push(HELD.sending[levels.sending]);
  if (levels.insights !== "none") held.push(HELD.insights[levels.insights]);
  if (levels.settings !== "none") held.push(HELD.settings[levels.settings]);
  if (levels.webhooks !== "none") held.push(HELD.webhooks[levels.webhooks]);
  return held;
}
