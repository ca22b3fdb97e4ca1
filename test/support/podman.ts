import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { ROOT_DIR } from './ports';

const execFileAsync = promisify(execFile);

/** The result of a podman command that is allowed to fail. */
export interface PodmanResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * podman with this machine's settings (scripts/podman.sh: vfs, runc, cgroupfs, no default ulimits). podman 4.3 logs
 * two error lines on every start of an image with a HEALTHCHECK when there is no systemd to time it; those lines
 * are dropped from stderr (the check itself is run by `podman healthcheck run`).
 */
export async function podman(args: string[], timeoutMs = 120_000): Promise<PodmanResult> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [resolve(ROOT_DIR, 'scripts', 'podman.sh'), ...args], {
      cwd: ROOT_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      stderr = stderr
        .split('\n')
        .filter((l) => !/unable to get systemd connection to (add|start) healthchecks/.test(l))
        .join('\n');
      done({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** podman that must succeed: its stdout, or an error with its stderr. */
export async function podmanOk(args: string[], timeoutMs?: number): Promise<string> {
  const r = await podman(args, timeoutMs);
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')}: exit ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * The image of this checkout, built (or found up to date in podman's layer cache) by scripts/build-image.sh: the
 * name it prints. CI builds it in its background set-up, so this is a cache hit there.
 */
export async function buildImage(): Promise<string> {
  const { stdout } = await execFileAsync('bash', [resolve(ROOT_DIR, 'scripts', 'build-image.sh')], {
    cwd: ROOT_DIR,
    timeout: 900_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout.trim().split('\n').pop() ?? '';
}
