// The TableLedger port in memory, for tests and local runs: the same semantics as the DynamoDB ledger in one
// process (an attempt found open past its deadline is claimed once as a crash).
import { crashOf, healthAfter, type TableFailure, type TableHealth } from '../core/isolation.js';
import type { TableAttempt, TableLedger } from '../ports/table-ledger.js';

export class MemoryTableLedger implements TableLedger {
  private readonly health = new Map<string, TableHealth>();
  private readonly attempts = new Map<string, TableAttempt>();

  async review(
    job: string,
    now: number,
  ): Promise<{ health: ReadonlyMap<string, TableHealth>; crashed: readonly TableAttempt[] }> {
    const crashed: TableAttempt[] = [];
    for (const [id, attempt] of this.attempts) {
      if (attempt.job !== job || attempt.until >= now) continue;
      this.attempts.delete(id);
      crashed.push(attempt);
      this.set(job, attempt.table, crashOf(attempt.table, job, attempt.since), now);
    }
    const health = new Map<string, TableHealth>();
    for (const [key, h] of this.health) {
      const [j, table] = JSON.parse(key) as [string, string];
      if (j === job) health.set(table, h);
    }
    return { health, crashed };
  }

  async begin(attempt: TableAttempt): Promise<void> {
    this.attempts.set(attempt.id, attempt);
  }

  async end(attempt: TableAttempt, failure: TableFailure | undefined, now: number): Promise<TableHealth> {
    this.attempts.delete(attempt.id);
    return this.set(attempt.job, attempt.table, failure, now);
  }

  /** Open attempts (tests look at what a dead invocation left). */
  open(): TableAttempt[] {
    return [...this.attempts.values()];
  }

  private set(job: string, table: string, failure: TableFailure | undefined, at: number): TableHealth {
    const key = JSON.stringify([job, table]);
    const next = healthAfter(this.health.get(key), failure, at);
    if (next.failures === 0) this.health.delete(key);
    else this.health.set(key, next);
    return next;
  }
}
