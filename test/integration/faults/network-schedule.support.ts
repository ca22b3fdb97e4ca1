import type { Rng } from '../../support/ground-truth';
import type { ProxiedService, ToxicSpec, Toxiproxy } from '../../support/toxiproxy';

/** The network faults of test/integration/faults/network.test.ts: what, on which link, how long, in what order. */

export const PROXIES: readonly ProxiedService[] = ['kafka', 'dynamodb'];

export interface Fault {
  label: string;
  holdMs: number;
  apply(): Promise<void>;
  clear(): Promise<void>;
}

/** Toxics on one proxy for `holdMs`, removed afterwards; every toxic is read back so a fault cannot silently miss. */
function toxicFault(
  toxi: Toxiproxy,
  proxy: ProxiedService,
  label: string,
  holdMs: number,
  toxics: Array<{ spec: ToxicSpec; stream: 'upstream' | 'downstream' }>,
): Fault {
  const names = toxics.map((t) => `${t.spec.type}-${t.stream}`);
  return {
    label: `${label} on ${proxy} for ${holdMs} ms`,
    holdMs,
    async apply() {
      for (const t of toxics) await toxi.addToxic(proxy, t.spec, { stream: t.stream });
      const present = new Set((await toxi.toxics(proxy)).map((t) => t.name));
      const missing = names.filter((n) => !present.has(n));
      if (missing.length > 0)
        throw new Error(`toxics ${missing.join(', ')} not on ${proxy} after adding them`);
    },
    async clear() {
      for (const n of names) await toxi.removeToxic(proxy, n);
    },
  };
}

/** The faults of one run, in a seeded order with seeded parameters. */
export function faultSchedule(toxi: Toxiproxy, rng: Rng): Fault[] {
  const faults: Fault[] = [];
  for (const proxy of PROXIES) {
    faults.push(
      toxicFault(toxi, proxy, 'connection resets (reset_peer)', rng.int(1500, 3000), [
        { spec: { type: 'reset_peer', attributes: { timeout: rng.int(0, 300) } }, stream: 'downstream' },
      ]),
      // Both directions: a partition, not only lost answers. Toxiproxy 2.5.0 drops what arrives meanwhile and closes
      // the connections when the toxic is removed; a connection that stays silent is the "silent links" test.
      toxicFault(toxi, proxy, 'black hole (timeout 0)', rng.int(3000, 5000), [
        { spec: { type: 'timeout', attributes: { timeout: 0 } }, stream: 'upstream' },
        { spec: { type: 'timeout', attributes: { timeout: 0 } }, stream: 'downstream' },
      ]),
      toxicFault(toxi, proxy, 'connections cut after a few KB (limit_data)', rng.int(1500, 3000), [
        { spec: { type: 'limit_data', attributes: { bytes: rng.int(1500, 8000) } }, stream: 'downstream' },
      ]),
    );
    const holdMs = rng.int(2000, 4000);
    faults.push({
      label: `${proxy} proxy disabled for ${holdMs} ms`,
      holdMs,
      apply: async () => {
        await toxi.setEnabled(proxy, false);
        if ((await toxi.proxy(proxy)).enabled) throw new Error(`${proxy} proxy still enabled`);
      },
      clear: () => toxi.setEnabled(proxy, true),
    });
  }
  faults.push(
    toxicFault(toxi, 'kafka', 'slow sliced link (bandwidth + slicer)', rng.int(2000, 4000), [
      { spec: { type: 'bandwidth', attributes: { rate: rng.int(20, 100) } }, stream: 'downstream' },
      {
        spec: {
          type: 'slicer',
          attributes: { average_size: rng.int(16, 256), size_variation: 8, delay: 500 },
        },
        stream: 'upstream',
      },
    ]),
  );
  return rng.shuffle(faults);
}
