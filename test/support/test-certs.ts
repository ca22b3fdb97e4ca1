import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Files infra/certs.sh makes (a private CA, broker and client certificates): see that script. */
export interface TestCerts {
  dir: string;
  ca: string;
  otherCa: string;
  server: string;
  serverKey: string;
  client: string;
  clientKey: string;
  clientEncryptedKey: string;
  clientPassphrase: string;
}

/** The certificates of infra/certs.sh, made once into a new temporary folder (openssl, about half a second). */
export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-certs-'));
  execFileSync('bash', [resolve(__dirname, '../../infra/certs.sh'), dir], { stdio: 'pipe' });
  return certsIn(dir);
}

/** The same files in a folder that already has them (the local stack's, tls/ in its lane's data dir). */
export function certsIn(dir: string): TestCerts {
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    otherCa: join(dir, 'other-ca.pem'),
    server: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    client: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    clientEncryptedKey: join(dir, 'client-encrypted.key'),
    clientPassphrase: 'client-pass',
  };
}
