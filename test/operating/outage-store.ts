/** A real MemoryStore behind a switch: while `down`, every call fails as a broken connection would. */
import { MemoryStore, type BudgetCharge, type ChargeOutcome, type ChargeRequest, type PolicyStore, type ReleaseTicket, type ResetRequest, type WindowReading } from "../../src/index.js";

export class SwitchedStore implements PolicyStore {
  down = false;
  calls = 0;
  readonly inner = new MemoryStore();
  private guard(): void {
    this.calls++;
    if (this.down) throw new Error("ECONNREFUSED (store switched off)");
  }
  charge(request: ChargeRequest): ChargeOutcome {
    this.guard();
    return this.inner.charge(request);
  }
  release(ticket: ReleaseTicket, now: number): boolean {
    this.guard();
    return this.inner.release(ticket, now);
  }
  read(budgets: readonly BudgetCharge[], now: number): WindowReading[] {
    this.guard();
    return this.inner.read(budgets, now);
  }
  reset(request: ResetRequest): void {
    this.guard();
    this.inner.reset(request);
  }
}
