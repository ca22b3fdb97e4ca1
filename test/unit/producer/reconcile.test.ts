import { reconcile, type ReconcileInput, type ReconcileDecision } from '../../../producer/reconcile';

const H = 'hash-a';
const H2 = 'hash-b';

/** Every row of step 2's decision table (docs/decisions/0001-deletion-protocol.md). */
const rows: Array<[string, ReconcileInput, Pick<ReconcileDecision, 'retract' | 'next'>]> = [
  [
    'table inactive, with intent',
    { active: false, intent: { state: 'PUBLISHED', imageHash: H }, item: { imageHash: H, expired: true } },
    { retract: false, next: 'leave' },
  ],
  [
    'table inactive, mark only',
    { active: false, item: { imageHash: H, expired: true } },
    { retract: false, next: 'leave' },
  ],
  [
    'intent INTENT, same image, still expired',
    { active: true, intent: { state: 'INTENT', imageHash: H }, item: { imageHash: H, expired: true } },
    { retract: false, next: 'resume-publish' },
  ],
  [
    'intent PUBLISHED, same image, still expired',
    { active: true, intent: { state: 'PUBLISHED', imageHash: H }, item: { imageHash: H, expired: true } },
    { retract: false, next: 'resume-delete' },
  ],
  [
    'intent, same image, no longer expired (settings changed)',
    { active: true, intent: { state: 'PUBLISHED', imageHash: H }, item: { imageHash: H, expired: false } },
    { retract: true, next: 'drop' },
  ],
  [
    'intent INTENT, item changed, still expired',
    { active: true, intent: { state: 'INTENT', imageHash: H }, item: { imageHash: H2, expired: true } },
    { retract: true, next: 'delete' },
  ],
  [
    'intent PUBLISHED, item changed, still expired',
    { active: true, intent: { state: 'PUBLISHED', imageHash: H }, item: { imageHash: H2, expired: true } },
    { retract: true, next: 'delete' },
  ],
  [
    'intent, item changed, not expired',
    { active: true, intent: { state: 'PUBLISHED', imageHash: H }, item: { imageHash: H2, expired: false } },
    { retract: true, next: 'drop' },
  ],
  [
    'intent PUBLISHED, item absent',
    { active: true, intent: { state: 'PUBLISHED', imageHash: H } },
    { retract: false, next: 'drop' },
  ],
  [
    'intent INTENT, item absent',
    { active: true, intent: { state: 'INTENT', imageHash: H } },
    { retract: true, next: 'drop' },
  ],
  [
    'intent DELETED, item absent',
    { active: true, intent: { state: 'DELETED', imageHash: H } },
    { retract: false, next: 'drop' },
  ],
  [
    'intent DELETED, key re-created, expired',
    { active: true, intent: { state: 'DELETED', imageHash: H }, item: { imageHash: H2, expired: true } },
    { retract: false, next: 'delete' },
  ],
  [
    'intent DELETED, key re-created, not expired',
    { active: true, intent: { state: 'DELETED', imageHash: H }, item: { imageHash: H2, expired: false } },
    { retract: false, next: 'drop' },
  ],
  [
    'intent DELETED, key re-created with the same image',
    { active: true, intent: { state: 'DELETED', imageHash: H }, item: { imageHash: H, expired: true } },
    { retract: false, next: 'delete' },
  ],
  [
    'intent RETRACTED, item absent: retract again (the RETRACT may not have gone out)',
    { active: true, intent: { state: 'RETRACTED', imageHash: H } },
    { retract: true, next: 'drop' },
  ],
  [
    'intent RETRACTED, item back at the same image and expired: never resumed, a new decision',
    { active: true, intent: { state: 'RETRACTED', imageHash: H }, item: { imageHash: H, expired: true } },
    { retract: true, next: 'delete' },
  ],
  [
    'intent RETRACTED, item changed, not expired',
    { active: true, intent: { state: 'RETRACTED', imageHash: H }, item: { imageHash: H2, expired: false } },
    { retract: true, next: 'drop' },
  ],
  ['no intent, item absent', { active: true }, { retract: false, next: 'drop' }],
  [
    'no intent, item not expired',
    { active: true, item: { imageHash: H, expired: false } },
    { retract: false, next: 'drop' },
  ],
  [
    'no intent, item expired',
    { active: true, item: { imageHash: H, expired: true } },
    { retract: false, next: 'delete' },
  ],
];

describe('reconcile (step 2 decision table)', () => {
  it.each(rows)('%s', (_name, input, expected) => {
    const d = reconcile(input);
    expect({ retract: d.retract, next: d.next }).toEqual(expected);
    expect(d.reason.length).toBeGreaterThan(0);
  });

  it('never retracts without an intent (there is no eventID to retract)', () => {
    for (const [, input] of rows) {
      if (!input.intent) expect(reconcile(input).retract).toBe(false);
    }
  });

  it('never deletes an item that is absent or not expired', () => {
    for (const [, input] of rows) {
      const d = reconcile(input);
      if (['delete', 'resume-publish', 'resume-delete'].includes(d.next))
        expect(input.item?.expired).toBe(true);
    }
  });
});
