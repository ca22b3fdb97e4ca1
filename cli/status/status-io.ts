import type { TtlstreamConfig } from '../../core/config';
import { NotFoundError } from '../../core/errors';
import { streamTopicFor } from '../../core/topics';
import { getGuard, guardActionOptionsFrom } from '../../pipeline/guard/actions';
import type { CliContext } from '../kit/context';
import { redactUrlCredentials } from '../kit/redact';
import { parsePrometheusText } from './prometheus';
import type { Scrape, TableFacts } from './report';

/**
 * Where a `ttlstream run` with this configuration serves /metrics: on `metrics.port` when set (a process
 * without the API role), else on the API's address. A wildcard listening address is asked on loopback.
 */
export function defaultMetricsUrl(config: TtlstreamConfig): string {
  const host = ['0.0.0.0', '::', ''].includes(config.api.host) ? '127.0.0.1' : config.api.host;
  const port = config.metrics.port ?? config.api.port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`;
}

/** GET one /metrics; a refusal, a timeout or a non-200 answer is said, never thrown. */
export async function scrapeMetrics(url: string, timeoutMs: number): Promise<Scrape> {
  const shown = redactUrlCredentials(url);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await res.text();
    if (res.status !== 200) return { url: shown, error: `HTTP ${res.status}` };
    return { url: shown, samples: parsePrometheusText(body) };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError') return { url: shown, error: `no answer within ${timeoutMs} ms` };
    return { url: shown, error: e.cause?.code ?? e.cause?.message ?? e.message };
  }
}

/**
 * The tables with TTL settings and what the control table says of them, read-only: a missing control table
 * holds no settings, and nothing is created.
 */
export async function readTableFacts(ctx: CliContext): Promise<TableFacts[]> {
  const all = await ctx.settingsStore.list();
  const withSettings = all.filter((d) => d.settings !== null);
  const { describeExpiryIndex } = await import('../../control/expiry-index');
  return Promise.all(
    withSettings.map(async (d): Promise<TableFacts> => {
      const guard = await getGuard({ ddb: ctx.ddb, options: guardActionOptionsFrom(ctx.config) }, d.table);
      let expiryIndex: string | null = null;
      if (d.settings?.expiryIndex) {
        try {
          expiryIndex = (await describeExpiryIndex(ctx.ddb, ctx.config.tables.control, d.table)).status;
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
          expiryIndex = 'TABLE GONE';
        }
      }
      return {
        table: d.table,
        ttl: d.status,
        settings: d.settings,
        expiryIndex,
        guard: d.status === 'DISABLED' && guard.state === 'ARMED' ? 'NOT_GUARDED' : guard.state,
        topic: streamTopicFor(ctx.config, d.table),
      };
    }),
  );
}
