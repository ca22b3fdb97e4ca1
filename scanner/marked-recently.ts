import { hash } from 'node:crypto';

/**
 * The marks this scanner wrote lately, so that while the producers work through a backlog every later pass does not
 * write the same marks again: a re-mark is idempotent, but it is a write, and on a busy server each pass over a
 * backlog of N expired items cost N writes competing with the deletions. An entry is for one verdict
 * (table, item, expiry instant): a changed TTL is a new entry. Entries are forgotten after `ttlMs` (so a mark the
 * producer dropped while the item was not deletable, e.g. under a legal hold released since, is written again within
 * that time), when the table's marks were discarded (guard cancel), and oldest first above `maxEntries` per table.
 *
 * A re-mark never stands in for a lost mark: marks are rows in the marks table and survive any crash (a producer
 * that dies mid-batch leaves the rows, or its journal, for the next sweep). It only catches marks the producer
 * dropped (above) or a cancel discarded while this scanner did not look. So it may wait for the next pass when the
 * pause between passes is longer than `ttlMs` (up to `scanner.backlogMaxPauseMs` while a backlog drains, see
 * ./backlog-watch.ts): the entry is due, and the next pass writes it; during a backlog a re-mark would queue behind
 * the backlog anyway.
 */
/** UTF-16 units up to which an sk is its own entry key. */
const SHORT_SK = 64;

export class MarkedRecently {
  private readonly byTable = new Map<string, Map<string, number>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /**
   * The entry's key: a short sk as it is (hashing it twice per expired item was ~10 % of a first pass's CPU), a
   * long one (up to ~1 KB) by digest so 250k entries stay small. The two forms cannot meet: only the first has a NUL.
   */
  private static id(sk: string, expiresAtMs: number): string {
    if (sk.length <= SHORT_SK) return `${expiresAtMs}\0${sk}`;
    return hash('sha1', `${sk}\0${expiresAtMs}`, 'base64');
  }

  /** True when this verdict was marked less than `ttlMs` ago. */
  has(table: string, sk: string, expiresAtMs: number, now: number): boolean {
    const seen = this.byTable.get(table);
    if (!seen || this.ttlMs <= 0) return false;
    const id = MarkedRecently.id(sk, expiresAtMs);
    const at = seen.get(id);
    if (at === undefined) return false;
    if (now - at >= this.ttlMs) {
      seen.delete(id);
      return false;
    }
    return true;
  }

  /**
   * When this verdict was last marked, however long ago, while it is remembered (not after a guard cancel, nor once
   * evicted above `maxEntries`); unlike `has`, it forgets nothing. For the rewind probe (./index-rewind.ts).
   */
  markedAt(table: string, sk: string, expiresAtMs: number): number | undefined {
    return this.byTable.get(table)?.get(MarkedRecently.id(sk, expiresAtMs));
  }

  /** Record marks once they are durable. */
  add(table: string, marks: ReadonlyArray<{ sk: string; expiresAtMs: number }>, now: number): void {
    if (this.ttlMs <= 0) return;
    let seen = this.byTable.get(table);
    if (!seen) this.byTable.set(table, (seen = new Map()));
    for (const m of marks) {
      const id = MarkedRecently.id(m.sk, m.expiresAtMs);
      seen.delete(id); // re-insert: Map order is age order
      seen.set(id, now);
    }
    for (const id of seen.keys()) {
      if (seen.size <= this.maxEntries) break;
      seen.delete(id);
    }
  }

  forgetTable(table: string): void {
    this.byTable.delete(table);
  }

  size(table: string): number {
    return this.byTable.get(table)?.size ?? 0;
  }
}
