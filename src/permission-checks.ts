/**
 * The permission checks of spec §7's `insufficient_scope` table, over the levels a credential holds
 * on a newsletter after its owner's role caps them (spec §5): the operation's own permission (#1,
 * #2), what a read-only credential may filter by (#4–#6), and expand paths (#7).
 */
import * as say from "./messages.js";
import type { CompiledOperation } from "./operations.js";
import { grantedLevel, heldPermissions, holds, levelsCode, requirementParts, satisfies, type Effective } from "./permissions.js";
import { frozenRefusal, insufficientScope, type Refusal } from "./refusal.js";
import { queryValues } from "./query.js";
import type { NormalRequest } from "./request.js";
import type { Grants, Level, Requirement } from "./types.js";


/**
 * The last refusal of spec §7 #1 or #2 and everything it was built from. A client refused for want
 * of a permission asks again the same way (a misconfigured key, a retry loop), so the refusal, its
 * message and its reason are built once and handed out again, frozen, while every input is the
 * same: the operation (which fixes the method shown: a request is routed by it), the path shown, the
 * newsletter, the role, every effective level and the raw grant of the needed family. Any other
 * request builds its own. test/properties/refusal-memo.test.ts fails when one of them is left out.
 */
let lastNeeds:
  | { op: CompiledOperation; path: string; newsletter: string; role: string; levels: number; granted: Level; refusal: Refusal }
  | undefined;

/** spec §7 #1, #2: the operation's own permission. */
export function checkNeeds(op: CompiledOperation, request: NormalRequest, newsletter: string, grants: Grants, role: string, levels: Effective): Refusal | undefined {
  const need = op.need;
  if (op.needs === undefined || need === undefined) return undefined;
  if (need.account || satisfies(levels[need.family], need.level)) return undefined;
  const granted = grantedLevel(grants, need.family);
  const code = levelsCode(levels);
  const last = lastNeeds;
  if (
    last !== undefined &&
    last.op === op &&
    last.path === request.path &&
    last.newsletter === newsletter &&
    last.role === role &&
    last.levels === code &&
    last.granted === granted
  ) {
    return last.refusal;
  }
  const refusal = frozenRefusal(neededRefusal(op, request, newsletter, granted, role, levels));
  lastNeeds = { op, path: request.path, newsletter, role, levels: code, granted, refusal };
  return refusal;
}

/** The refusal of spec §7 #1 or #2, built. */
function neededRefusal(op: CompiledOperation, request: NormalRequest, newsletter: string, granted: Level, role: string, levels: Effective): Refusal {
  const need = op.need as Extract<CompiledOperation["need"], { account: false }>;
  const needs = op.needs!;
  const held = heldPermissions(levels);
  const facts: say.Needed = { method: request.method, path: request.path, needs, newsletter, held };
  if (satisfies(granted, need.level)) {
    // spec §7 #2: minted with the family, capped by the owner's role now; show what it holds after the cap
    const message = say.cappedByRole(facts, need.family, granted, role, levels[need.family]);
    return insufficientScope({ specCase: 2, needed: needs, message, held, allowedValues: [needs] });
  }
  return insufficientScope({ specCase: 1, needed: needs, message: say.lacksPermission(facts), held, allowedValues: [needs] });
}

/** spec §5.7 and §7 #4–#6: what a read-only credential may filter by. */
export function checkFilters(op: CompiledOperation, request: NormalRequest, newsletter: string, levels: Effective): Refusal | undefined {
  const filters = op.spec.filters;
  if (filters === undefined) return undefined;
  for (const name of Object.keys(filters)) {
    // empty values count: `?status=` is not `sent` (spec §7 #4), `?tag=` uses the tag filter (#5)
    const values = queryValues(request.query, name, true);
    if (values.length === 0) continue;
    const allowed = filters[name]!.reader;
    const refused = values.find((v) => !allowed.includes(v));
    if (refused === undefined) continue;
    // spec §5.7: write in any family lifts the restriction; name the operation's own family
    const need = op.need;
    const needed: Requirement = need !== undefined && !need.account ? `${need.family}: write` : "content: write";
    const held = heldPermissions(levels);
    const message = say.filterNeedsWrite({ path: request.path, name, refused, allowed, needed, newsletter, held });
    return insufficientScope({ specCase: filters[name]!.specCase ?? (allowed.length === 0 ? 5 : 4), needed, message, held, param: name, allowedValues: allowed });
  }
  return undefined;
}

/** spec §7 #7: an expand path that needs a family (or `account: read`) the credential lacks. */
export function checkExpand(op: CompiledOperation, request: NormalRequest, newsletter: string, levels: Effective, account: boolean): Refusal | undefined {
  const paths = op.spec.expand;
  if (paths === undefined) return undefined;
  for (const path of queryValues(request.query, "expand")) {
    if (!Object.hasOwn(paths, path)) continue; // unknown paths are bad input, judged after permissions
    if (holds(paths[path]!, levels, account)) continue;
    const allowed = op.expandPaths.filter((p) => holds(paths[p]!, levels, account));
    const held = heldPermissions(levels);
    const message = say.expandNeedsPermission(path, request.path, paths[path]!, newsletter, held);
    return insufficientScope({ specCase: 7, needed: paths[path]!, message, held, param: "expand", allowedValues: allowed });
  }
  return undefined;
}
