import type { StreamRecord } from '../../../schemas';
import {
  checkInvariants,
  planSeed,
  Rng,
  type CheckInput,
  type Item,
  type KeyTruth,
  type TableTruth,
} from '../../support/ground-truth';
import type { StreamMessage } from '../../support/stream-log';
import { removeRecord } from '../../support/archive-fixture';

/**
 * The checker must fail when an invariant is broken, or the fault tests prove nothing. Each case starts from a
 * correct history of a small seeded table (which passes) and breaks it in one way; the checker must name the key.
 * No services are needed; it lives here because it belongs to the fault suite.
 */

const TABLE = 'checker-table';
const NOW = Date.UTC(2030, 0, 1);

/** The REMOVE record of `image`, decided at `decidedMs`: sequence numbers follow the decisions. */
function decidedRemove(table: string, image: Item, eventID: string, decidedMs: number): StreamRecord {
  return removeRecord({
    table,
    eventID,
    keys: { pk: image.pk as { S: string } },
    image: image as StreamRecord['dynamodb']['OldImage'],
    deletedAtSec: Math.floor(decidedMs / 1000),
    sequenceNumber: String(decidedMs).padStart(21, '0'),
    sizeBytes: 100,
    viewType: 'OLD_IMAGE',
    streamLabel: 'ttlstream',
  });
}

class History {
  readonly truth: TableTruth;
  readonly snapshot = new Map<string, Item>();
  readonly messages: StreamMessage[] = [];
  private offset = 0;
  private ids = 0;

  constructor(seed = 7) {
    this.truth = planSeed(TABLE, {
      seed,
      nowMs: NOW - 60_000,
      counts: { expired: 6, soon: 3, future: 3, held: 2, extend: 2, rewrite: 2, race: 2, touch: 2 },
    });
    // A correct run: the writer's operations succeed, every due key is deleted with one REMOVE after its expiry.
    for (const w of this.truth.writerPlan) {
      const k = this.truth.byPk.get(w.pk) as KeyTruth;
      const prev = this.truth.last(k);
      const image: Item = { ...prev.image, writerOp: { S: w.kind } };
      if (w.kind === 'touch') {
        this.truth.overwrite(w.pk, image, prev.expiresAtMs, 'writer', NOW - 50_000);
        continue;
      }
      if (w.kind === 'extend') image.ttl = { N: String(NOW / 1000 + 3600) };
      else delete image.ttl;
      this.truth.overwrite(w.pk, image, null, 'writer', NOW - 50_000);
    }
    for (const k of this.truth.keys.values()) {
      const v = this.truth.last(k);
      if (v.expiresAtMs !== null && v.expiresAtMs <= NOW)
        this.publish(k, v.image, Math.max(v.expiresAtMs, NOW - 40_000) + 10);
      else this.snapshot.set(k.id, v.image);
    }
  }

  publish(k: KeyTruth, image: Item, atMs: number, eventID = `e${++this.ids}`): StreamMessage {
    const m: StreamMessage = {
      partition: 0,
      offset: this.offset++,
      timestampMs: atMs,
      key: k.id,
      decoded: { kind: 'remove', record: decidedRemove(TABLE, image, eventID, atMs) },
    };
    this.messages.push(m);
    return m;
  }

  retract(k: KeyTruth, eventID: string): void {
    this.messages.push({
      partition: 0,
      offset: this.offset++,
      timestampMs: NOW,
      key: k.id,
      decoded: {
        kind: 'retract',
        retraction: {
          eventName: 'RETRACT',
          retractsEventID: eventID,
          table: TABLE,
          Keys: k.keys as StreamRecord['dynamodb']['Keys'],
          reason: 'condition-failed',
          retractedAt: NOW,
        },
      },
    });
  }

  key(category: string): KeyTruth {
    const k = [...this.truth.keys.values()].find((x) => x.category === category);
    if (!k) throw new Error(`no ${category} key`);
    return k;
  }

  removeOf(k: KeyTruth): StreamMessage {
    const m = this.messages.find((x) => x.key === k.id && x.decoded?.kind === 'remove');
    if (!m) throw new Error(`no REMOVE for ${k.pk}`);
    return m;
  }

  check(extra: Partial<CheckInput> = {}) {
    return checkInvariants({
      truths: [this.truth],
      snapshots: new Map([[TABLE, this.snapshot]]),
      messages: this.messages,
      nowMs: NOW,
      region: 'us-east-1',
      ...extra,
    });
  }
}

function problemsAbout(h: History, k: KeyTruth, extra?: Partial<CheckInput>): string[] {
  const r = h.check(extra);
  expect(r.ok).toBe(false);
  return r.problems.filter((p) => p.includes(k.pk));
}

describe('the invariant checker', () => {
  it('accepts a correct history (the baseline every case below breaks)', () => {
    const h = new History();
    const r = h.check();
    expect(r.problems).toEqual([]);
    expect(r.summary.deletedVersions).toBeGreaterThan(5);
    expect(r.summary.keptKeys).toBeGreaterThan(5);
  });

  it('is reproducible from the seed', () => {
    const a = planSeed(TABLE, { seed: 99, nowMs: NOW });
    const b = planSeed(TABLE, { seed: 99, nowMs: NOW });
    const c = planSeed(TABLE, { seed: 100, nowMs: NOW });
    const images = (t: TableTruth) =>
      [...t.keys.values()].map((k) =>
        JSON.stringify(k.versions[0]?.image, (_, v: unknown) => (v instanceof Uint8Array ? [...v] : v)),
      );
    expect(images(a)).toEqual(images(b));
    expect(images(a)).not.toEqual(images(c));
    expect(new Rng(1).next()).not.toBe(new Rng(2).next());
  });

  it('1: a deleted item without its REMOVE', () => {
    const h = new History();
    const k = h.key('expired');
    h.messages.splice(h.messages.indexOf(h.removeOf(k)), 1);
    expect(problemsAbout(h, k).join()).toMatch(
      /0 effective REMOVE records with its image, expected exactly 1/,
    );
  });

  it('1: duplicates of one eventID count once; two eventIDs for one deletion are two records', () => {
    const h = new History();
    const k = h.key('expired');
    const m = h.removeOf(k);
    h.publish(
      k,
      h.truth.last(k).image,
      m.timestampMs,
      (m.decoded as { record: StreamRecord }).record.eventID,
    );
    expect(h.check().problems).toEqual([]);
    h.publish(k, h.truth.last(k).image, m.timestampMs, 'another-id');
    expect(problemsAbout(h, k).join()).toMatch(/has 2 effective REMOVE records/);
  });

  it('1: a REMOVE with another image than the one deleted', () => {
    const h = new History();
    const k = h.key('expired');
    const m = h.removeOf(k);
    const rec = (m.decoded as { record: StreamRecord }).record;
    rec.dynamodb.OldImage = { ...rec.dynamodb.OldImage, payload: { S: 'tampered' } };
    const p = problemsAbout(h, k).join('\n');
    expect(p).toMatch(/0 effective REMOVE records with its image/);
    expect(p).toMatch(/an image we never wrote/);
  });

  it('1: an unretracted REMOVE for a kept item; retracting it makes it fine', () => {
    const h = new History();
    const k = h.key('extend');
    h.publish(k, k.versions[0]!.image, NOW - 30_000, 'published-then-extended');
    expect(problemsAbout(h, k).join()).toMatch(
      /effective REMOVE published-then-extended .* which was not deleted; the item is still in the table/,
    );
    h.retract(k, 'published-then-extended');
    expect(h.check().problems).toEqual([]);
  });

  it('1: one eventID carrying two different deletions', () => {
    const h = new History();
    const [a, b] = [...h.truth.keys.values()].filter((k) => k.category === 'expired');
    const id = (h.removeOf(a!).decoded as { record: StreamRecord }).record.eventID;
    h.messages.splice(h.messages.indexOf(h.removeOf(b!)), 1);
    h.publish(b!, h.truth.last(b!).image, NOW - 1000, id);
    expect(h.check().problems.join('\n')).toMatch(
      new RegExp(`eventID ${id} is used by two different REMOVE records`),
    );
  });

  it('1: a touched item whose record carries the image from before the change', () => {
    const h = new History();
    const k = h.key('touch');
    const m = h.removeOf(k);
    (m.decoded as { record: StreamRecord }).record.dynamodb.OldImage = k.versions[0]!
      .image as StreamRecord['dynamodb']['OldImage'];
    const p = problemsAbout(h, k).join('\n');
    expect(p).toMatch(/deleted version 2\/2 .* has 0 effective REMOVE records with its image/);
    expect(p).toMatch(/effective REMOVE .* for version 1\/2 .*which was not deleted/);
  });

  it('2: a held, future or extended item deleted', () => {
    for (const category of ['held', 'future', 'extend', 'rewrite']) {
      const h = new History();
      const k = h.key(category);
      h.snapshot.delete(k.id);
      expect(problemsAbout(h, k).join()).toMatch(/DELETED although .* must never be deleted/);
    }
  });

  it('2: an expired item still in the table', () => {
    const h = new History();
    const k = h.key('soon');
    h.messages.splice(h.messages.indexOf(h.removeOf(k)), 1);
    h.snapshot.set(k.id, h.truth.last(k).image);
    expect(problemsAbout(h, k).join()).toMatch(/is still in the table \(not deleted\)/);
  });

  it('2: a REMOVE decided or published before the item expired', () => {
    const h = new History();
    const k = h.key('soon');
    const m = h.removeOf(k);
    const rec = (m.decoded as { record: StreamRecord }).record;
    const expiry = h.truth.last(k).expiresAtMs as number;
    m.timestampMs = expiry - 1;
    rec.dynamodb.ApproximateCreationDateTime = Math.floor(expiry / 1000) - 1;
    const p = problemsAbout(h, k).join('\n');
    expect(p).toMatch(/was decided at .* before the item expired/);
    expect(p).toMatch(/was published at .* before the item expired/);
  });

  it('2: a kept item whose content changed', () => {
    const h = new History();
    const k = h.key('future');
    h.snapshot.set(k.id, { ...h.truth.last(k).image, payload: { S: 'changed by someone' } });
    expect(problemsAbout(h, k).join()).toMatch(/item in the table differs from/);
  });

  it('3: a key absent at a probe whose REMOVE came only after the offsets read then', () => {
    const h = new History();
    const k = h.key('expired');
    const m = h.removeOf(k);
    const probe = (hw: number) => ({
      probes: [
        {
          scanStartedMs: NOW,
          table: TABLE,
          absent: [k.id],
          highWater: new Map([[0, hw]]),
          label: 'test probe',
        },
      ],
    });
    expect(h.check(probe(m.offset + 1)).problems).toEqual([]);
    expect(problemsAbout(h, k, probe(m.offset)).join()).toMatch(
      /no REMOVE for it was on Kafka then \(publish-before-delete violated\)/,
    );
  });

  it('3: a key absent at a probe before it expired', () => {
    const h = new History();
    const k = h.key('soon');
    const expiry = h.truth.last(k).expiresAtMs as number;
    const probes = [
      {
        scanStartedMs: expiry - 500,
        table: TABLE,
        absent: [k.id],
        highWater: new Map([[0, 1_000_000]]),
        label: 'early probe',
      },
    ];
    expect(problemsAbout(h, k, { probes }).join()).toMatch(/was not yet expired/);
  });

  it('poison messages and unknown keys are reported', () => {
    const h = new History();
    h.messages.push({ partition: 1, offset: 0, timestampMs: NOW, key: null, poison: 'undecodable: garbage' });
    const ghost = { ...h.key('expired'), id: 'ghost', pk: 'ghost-key' } as KeyTruth;
    h.publish(ghost, { pk: { S: 'ghost-key' } }, NOW);
    const p = h.check().problems.join('\n');
    expect(p).toMatch(/poison message at 1:0/);
    expect(p).toMatch(/effective REMOVE for a key that was never seeded/);
  });

  it('a re-created key: the deleted incarnation keeps its REMOVE, the new one stays', () => {
    const h = new History();
    const k = h.key('expired');
    const fresh: Item = { pk: k.keys.pk!, payload: { S: 'second life' } };
    h.truth.recreate(k.pk, fresh, null, NOW - 1000);
    h.snapshot.set(k.id, fresh);
    expect(h.check().problems).toEqual([]);
    // ...and the bug the recreated-key scenario looks for: that REMOVE retracted afterwards.
    h.retract(k, (h.removeOf(k).decoded as { record: StreamRecord }).record.eventID);
    expect(problemsAbout(h, k).join()).toMatch(/deleted version 1\/2 .* has 0 effective REMOVE records/);
  });

  it('1: an identical item deleted twice needs two effective records; one eventID for both is one record', () => {
    const h = new History();
    const k = h.key('expired');
    const first = h.truth.last(k);
    const firstId = (h.removeOf(k).decoded as { record: StreamRecord }).record.eventID;
    // Re-put byte-identical (as `restore --ttl keep` does) and deleted again: the version ends deleted too.
    h.truth.recreate(k.pk, first.image, first.expiresAtMs, NOW - 20_000);
    h.truth.last(k).ended = 'observed-deleted';
    h.truth.recreate(k.pk, { pk: k.keys.pk!, payload: { S: 'third' } }, null, NOW - 10_000);
    h.snapshot.set(k.id, h.truth.last(k).image);
    // The defect: the second deletion published under the first one's eventID, so de-duplication drops it.
    h.publish(k, first.image, NOW - 15_000, firstId);
    expect(problemsAbout(h, k).join()).toMatch(
      /have 1 effective REMOVE records with their image, expected exactly 2, one per deletion/,
    );
    // One eventID per deletion decision: two effective records.
    h.messages.pop();
    h.publish(k, first.image, NOW - 15_000, 'second-deletion');
    expect(h.check().problems).toEqual([]);
  });

  it('1: a deletion whose eventID was retracted earlier and published again counts as retracted', () => {
    const h = new History();
    const k = h.key('expired');
    const m = h.removeOf(k);
    const id = (m.decoded as { record: StreamRecord }).record.eventID;
    // REMOVE, RETRACT, REMOVE under one eventID (the TTL flipped while it was being deleted): the documented rule
    // "a retracted eventID stays retracted" leaves the deletion without an effective record.
    h.retract(k, id);
    h.publish(k, h.truth.last(k).image, m.timestampMs + 5, id);
    expect(problemsAbout(h, k).join()).toMatch(
      /has 0 effective REMOVE records with its image, expected exactly 1/,
    );
  });
});
