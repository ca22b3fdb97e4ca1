/**
 * Where a V8 CPU profile's time went (`npx tsx bench/profile-summary.ts <file.cpuprofile> [--top 25]`): the busy
 * time (idle left out) by owner (an npm package, a Node.js internal module, a ttlstream folder, garbage collection),
 * and the functions with the most self time. Reads the profiles BENCH_CPU_PROFILE_DIR makes (bench/profile.ts).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The owner of a frame: `@scope/pkg` or `pkg` under node_modules, `node:<module>`, or the ttlstream folder. */
export function ownerOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return '(gc)';
    if (functionName === '(idle)') return '(idle)';
    return functionName.startsWith('(') ? functionName : '(native)';
  }
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? url);
  }
  if (url.startsWith('node:')) return url;
  const path = url.replace(/^file:\/\//, '');
  const m =
    /\/(archiver|bench|cli|client|consumer|control|core|pipeline|policy|producer|scanner|schemas)\/(.*)$/.exec(
      path,
    );
  if (m) {
    const [, folder, file] = m as unknown as [string, string, string];
    const sub = file.includes('/') ? `${folder}/${file.split('/')[0] ?? ''}/` : `${folder}/`;
    return sub;
  }
  return path;
}

export function summarize(profile: CpuProfile): {
  totalMs: number;
  busyMs: number;
  byOwner: Array<[string, number]>;
  byFunction: Array<[string, number]>;
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  profile.samples.forEach((id, i) =>
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000),
  );
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let totalMs = 0;
  let idleMs = 0;
  for (const [id, ms] of selfMs) {
    const node = byId.get(id);
    if (!node) continue;
    totalMs += ms;
    const { functionName, url, lineNumber } = node.callFrame;
    const owner = ownerOf(url, functionName);
    if (owner === '(idle)') {
      idleMs += ms;
      continue;
    }
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + ms);
    const fn = `${functionName || '(anonymous)'} ${url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(?=[a-z-]+\/[^/]+\.ts)/, '')}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
  }
  const sorted = (m: Map<string, number>) => [...m].sort(([, a], [, b]) => b - a);
  return { totalMs, busyMs: totalMs - idleMs, byOwner: sorted(byOwner), byFunction: sorted(byFunction) };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' } },
  });
  const top = Number(values.top);
  for (const file of positionals) {
    const s = summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
    const pct = (ms: number): string => `${((100 * ms) / s.busyMs).toFixed(1)} %`;
    process.stdout.write(
      `${file}: busy ${(s.busyMs / 1000).toFixed(2)} s of ${(s.totalMs / 1000).toFixed(2)} s\n`,
    );
    process.stdout.write('\nby owner (self time, share of busy)\n');
    for (const [owner, ms] of s.byOwner.slice(0, top))
      process.stdout.write(`  ${pct(ms).padStart(7)}  ${owner}\n`);
    process.stdout.write('\nby function (self time)\n');
    for (const [fn, ms] of s.byFunction.slice(0, top))
      process.stdout.write(`  ${pct(ms).padStart(7)}  ${fn}\n`);
    process.stdout.write('\n');
  }
}

if (require.main === module) main();
