import { mkdirSync, writeFileSync } from 'node:fs';
import inspector from 'node:inspector/promises';
import { join } from 'node:path';

/**
 * BENCH_CPU_PROFILE_DIR=<dir>: a V8 CPU profile of one measured phase of this process alone (not the seeding and
 * raw runs around it), written as <dir>/<name>.cpuprofile for Chrome DevTools or speedscope, and one of each of its
 * worker threads (the Parquet encoding threads) as <dir>/<name>.worker-<n>.cpuprofile. Null when not asked.
 * Profiling slows the process a little: a profiled run's figures are not the ones to report.
 */
export async function startProfile(): Promise<{ stop(name: string): Promise<void> } | null> {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  if (!dir) return null;
  const session = new inspector.Session();
  session.connect();
  // BENCH_HEAP_PROFILE=1: a sampling heap profile (<name>.heapprofile: where the garbage comes from) instead.
  const heap = process.env.BENCH_HEAP_PROFILE === '1';
  if (heap)
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 16 * 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  else {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const workers = heap ? null : await profileWorkers(session);
  return {
    async stop(name) {
      mkdirSync(dir, { recursive: true });
      if (heap) {
        const { profile } = await session.post('HeapProfiler.stopSampling');
        writeFileSync(join(dir, `${name}.heapprofile`), JSON.stringify(profile));
      } else {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
        const profiles = (await workers?.stop()) ?? [];
        profiles.forEach((p, n) =>
          writeFileSync(join(dir, `${name}.worker-${n}.cpuprofile`), JSON.stringify(p)),
        );
      }
      session.disconnect();
    },
  };
}

/**
 * CPU profiles of this process's worker threads, those running now and those started later, through the
 * inspector's NodeWorker domain (each worker has its own V8 isolate, which the main thread's Profiler does not see).
 */
async function profileWorkers(session: inspector.Session): Promise<{ stop(): Promise<unknown[]> }> {
  const sessions: string[] = [];
  const replies = new Map<string, (result: unknown) => void>();
  let id = 0;
  const send = (sessionId: string, method: string): Promise<unknown> =>
    new Promise((resolve) => {
      const msgId = ++id;
      replies.set(`${sessionId}/${msgId}`, resolve);
      void session.post('NodeWorker.sendMessageToWorker', {
        sessionId,
        message: JSON.stringify({ id: msgId, method }),
      });
    });
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
    const m = JSON.parse(params.message) as { id?: number; result?: unknown };
    const key = `${params.sessionId}/${m.id}`;
    replies.get(key)?.(m.result);
    replies.delete(key);
  });
  session.on('NodeWorker.attachedToWorker', ({ params }) => {
    sessions.push(params.sessionId);
    void send(params.sessionId, 'Profiler.enable').then(() => send(params.sessionId, 'Profiler.start'));
  });
  await session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  return {
    async stop() {
      const results = await Promise.all(sessions.map((s) => send(s, 'Profiler.stop')));
      await session.post('NodeWorker.disable');
      return results.map((r) => (r as { profile: unknown }).profile);
    },
  };
}

/**
 * BENCH_CPU_PROFILE_DIR with BENCH_SERVER_PROFILE=1: a V8 CPU profile of a local-stack server that runs on Node.js
 * (dynalite) over one phase, through its inspector: SIGUSR1 opens it on 127.0.0.1:`port` (it stays open until the
 * server stops). Null when not asked. Where the server's CPU per deletion goes.
 */
export async function startServerProfile(
  pid: number | null,
  port = 9229,
): Promise<{ stop(name: string): Promise<void> } | null> {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  if (!dir || process.env.BENCH_SERVER_PROFILE !== '1' || pid === null) return null;
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  for (let i = 0; i < 50 && url === undefined; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
        webSocketDebuggerUrl?: string;
      }>;
      url = list[0]?.webSocketDebuggerUrl;
    } catch {
      // Not listening yet.
    }
  }
  if (url === undefined) throw new Error(`no inspector of process ${pid} on port ${port}`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  ws.onmessage = (ev) => {
    const m = JSON.parse(String(ev.data)) as { id?: number; result?: unknown };
    const done = m.id === undefined ? undefined : pending.get(m.id);
    if (done && m.id !== undefined) {
      pending.delete(m.id);
      done(m.result);
    }
  };
  const post = (method: string): Promise<unknown> =>
    new Promise((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ id, method }));
    });
  await post('Profiler.enable');
  await post('Profiler.start');
  return {
    async stop(name) {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      ws.close();
    },
  };
}
