import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { unknownNames } from '../../support/promql-names';

interface Dashboard {
  uid: string;
  panels: Array<{ id: number; title: string; targets: Array<{ refId: string; expr: string }> }>;
}

const dashboard = JSON.parse(
  readFileSync(join(__dirname, '..', '..', '..', 'deploy', 'grafana', 'ttlstream.json'), 'utf8'),
) as Dashboard;

/**
 * The dashboard's queries name only series and labels ttlstream exposes. That they parse and return series on a real
 * Prometheus scraping a real run is test/integration/observability/prometheus.test.ts.
 */
describe('deploy/grafana/ttlstream.json', () => {
  it('has the panels operators need, each with a query, and unique panel ids', () => {
    expect(dashboard.panels.map((p) => p.title)).toEqual(
      expect.arrayContaining([
        'Deletions vs expiries',
        'Expiry-to-record lag',
        'Marks backlog',
        'Archive lag',
        'Guard state',
        'Archive write errors',
        'Processes per role',
        'Kafka errors',
        'DynamoDB errors and retries',
      ]),
    );
    for (const p of dashboard.panels)
      expect({ panel: p.title, queries: p.targets.length > 0 }).toEqual({ panel: p.title, queries: true });
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
  });

  it('queries only series and labels ttlstream exposes', () => {
    const problems = dashboard.panels.flatMap((p) =>
      p.targets.flatMap((t) => unknownNames(t.expr).map((x) => `${p.title} ${t.refId}: ${x}`)),
    );
    expect(problems).toEqual([]);
  });
});
