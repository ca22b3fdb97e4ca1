import { schemaRegistry } from '../../../schemas';
import { schemaExportFiles, subjectRows } from '../../../schemas/export';
import { registrationPlan, subjectFor } from '../../../schemas/subjects';

describe('registry subjects of the stream schemas', () => {
  it('topic strategy: REMOVE under <topic>-value, retractions under <topic>-<full name>', () => {
    expect(subjectFor('topic', 'ttlstream.remove', 'remove')).toBe('ttlstream.remove-value');
    expect(subjectFor('topic', 'ttlstream.remove', 'retract')).toBe('ttlstream.remove-ttlstream.Retraction');
  });

  it('record strategy: the record full name, whatever the topic', () => {
    expect(subjectFor('record', 'a', 'remove')).toBe('ttlstream.StreamRecord');
    expect(subjectFor('record', 'b', 'retract')).toBe('ttlstream.Retraction');
  });

  it('registration plan: every version of each family, oldest first, each subject once', () => {
    const versions = (name: string): number[] =>
      schemaRegistry()
        .versions.filter((v) => v.name === name)
        .map((v) => v.version);
    const plan = registrationPlan(['t1', 't2'], 'topic');
    expect(plan.map((p) => [p.subject, p.schema.version])).toEqual([
      ...versions('stream-record').map((v) => ['t1-value', v]),
      ...versions('retraction').map((v) => ['t1-ttlstream.Retraction', v]),
      ...versions('stream-record').map((v) => ['t2-value', v]),
      ...versions('retraction').map((v) => ['t2-ttlstream.Retraction', v]),
    ]);
    expect(new Set(registrationPlan(['t1', 't2'], 'record').map((p) => p.subject))).toEqual(
      new Set(['ttlstream.StreamRecord', 'ttlstream.Retraction']),
    );
    // The registered text is the .avsc file itself (docs kept), compact.
    expect(JSON.parse(plan[0]?.text ?? '')).toMatchObject({
      type: 'record',
      name: 'StreamRecord',
      namespace: 'ttlstream',
    });
  });

  it('schemas export lists the subject names of both strategies', () => {
    expect(subjectRows()).toEqual([
      { strategy: 'topic', kind: 'remove', schema: 'ttlstream.StreamRecord', subject: '<topic>-value' },
      {
        strategy: 'topic',
        kind: 'retract',
        schema: 'ttlstream.Retraction',
        subject: '<topic>-ttlstream.Retraction',
      },
      {
        strategy: 'record',
        kind: 'remove',
        schema: 'ttlstream.StreamRecord',
        subject: 'ttlstream.StreamRecord',
      },
      {
        strategy: 'record',
        kind: 'retract',
        schema: 'ttlstream.Retraction',
        subject: 'ttlstream.Retraction',
      },
    ]);
    const md = schemaExportFiles().find((f) => f.name === 'subjects.md')?.content ?? '';
    expect(md).toContain('| topic | remove | ttlstream.StreamRecord | `<topic>-value` |');
  });
});
