/**
 * The shapes of configuration a host writes (`PolicyOptions`) and the budgets it resolves to.
 * config.ts validates and compiles them.
 */
import type { OperationSpec } from "./catalogue.js";
import type { BudgetOptions, Family, Level } from "./types.js";


/** Everything a host may configure; every field is optional and defaults to the spec's numbers. */
export interface PolicyOptions {
  /** Budget sizes and windows; `general`, `audience`, `write` default to 600/60 s, 60/60 s, 60/60 s. Extra names add budgets. */
  budgets?: Record<string, Partial<BudgetOptions>>;
  /** Daily caps: dispatches per newsletter (default 25) and test sends per credential (default 50). */
  caps?: { dispatch?: { limit?: number }; testSend?: { limit?: number } };
  /** Extra roles: caps per family; a family left out is capped at `none`. owner/admin/editor are built in. */
  roles?: Record<string, Partial<Record<Family, Level>>>;
  /** Base of `docs_url`; the error code is appended. Default `https://docs.example.com/errors`. */
  docsUrl?: string;
  /** Unit of `Retry-After` for daily caps: `hours` (spec §7, default) or `seconds` (RFC 9110). */
  dailyRetryAfter?: "hours" | "seconds";
  /**
   * Where a day starts for the daily caps: the UTC offset, in minutes, of the time zone whose
   * midnight starts it. Default 0 (midnight UTC); 60 is midnight at UTC+01:00 (23:00 UTC), -300
   * midnight at UTC-05:00 (05:00 UTC). Between -1439 and 1439.
   */
  dayStartsAtUtcOffsetMinutes?: number;
  /**
   * Extra operations. One with the id of a catalogue operation takes its place, over it (what it
   * leaves out stays the built-in's), so that the permissions the spec leaves unstated
   * (`events.list`, `tags.subscribers.add`, `articles.testSend`) can be changed and budgets added;
   * one that would change what the spec states of a built-in throws PolicyConfigError. The others
   * are added.
   */
  operations?: readonly OperationSpec[];
  /**
   * Told of config warnings (today one: `docsUrl` left unset) each time a config is compiled.
   * Default: one warning per process, through `process.emitWarning` where it exists (Node, Bun,
   * Deno; silenced by `--no-warnings`) and `console.warn` elsewhere. Pass `() => {}` to silence it.
   */
  onWarning?: (warning: PolicyWarning) => void;
}

/** A budget, resolved. */
export interface BudgetSpec {
  readonly name: string;
  readonly limit: number;
  readonly window: number;
  /** Position in policy order: `general`, `audience`, `write`, then the host's. */
  readonly order: number;
}

/** Something the host should know about its config; it does not stop the policy. */
export interface PolicyWarning {
  /**
   * - `docs_url_default`: `docsUrl` was left unset, so error bodies link to the placeholder `https://docs.example.com/errors`.
   * - `operation_needs_nothing`: an operation of the host's that writes, or takes a resource's id,
   *   has no `needs`: any credential passes its permission check (a newsletter the request names is
   *   still checked for reach). Give it `needs` unless every credential is meant to pass.
   */
  readonly code: "docs_url_default" | "operation_needs_nothing";
  readonly message: string;
}
