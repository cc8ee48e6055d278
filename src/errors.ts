/**
 * Thrown for host mistakes only: invalid config, a credential that is not a credential, a clock that
 * is not a number. Never thrown for anything a client sends; that is a refusal.
 *
 * @example
 * try { defineConfig({ budgets: { general: { limit: 0, window: 60 } } }); }
 * catch (e) { if (e instanceof PolicyConfigError) console.error(e.field); } // "budgets.general.limit"
 */
export class PolicyConfigError extends Error {
  /** The offending field, as a dotted path (`budgets.general.limit`, `operations[2].needs`). */
  readonly field: string;
  /** What is wrong with it, e.g. `must be a whole number ≥ 1; got 0` (the message is `newsletter-policy: <field> <problem>`). */
  readonly problem: string;

  /**
   * @param field - the offending field, as a dotted path.
   * @param problem - what it must be, e.g. `must be a whole number ≥ 1; got 0`.
   */
  constructor(field: string, problem: string) {
    super(`newsletter-policy: ${field} ${problem}`);
    this.name = "PolicyConfigError";
    this.field = field;
    this.problem = problem;
  }
}
