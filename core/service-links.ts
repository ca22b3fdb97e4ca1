import { isIP } from 'node:net';

/**
 * The variables the kubelet gives every container for each Service of its namespace, unless the pod spec sets
 * `enableServiceLinks: false` (Kubernetes' pkg/kubelet/envvars, the Docker-links convention). For a Service named
 * `ttlstream-api` (the name upper-cased, `-` made `_`), cluster IP A and ports P of protocol R (TCP, UDP or SCTP):
 *
 *     TTLSTREAM_API_SERVICE_HOST=A
 *     TTLSTREAM_API_SERVICE_PORT=P                 the first port
 *     TTLSTREAM_API_SERVICE_PORT_<NAME>=P          each named port (`http` → `_HTTP`)
 *     TTLSTREAM_API_PORT=r://A:P                   the first port (r: R in lower case; an IPv6 A in brackets)
 *     TTLSTREAM_API_PORT_<P>_<R>=r://A:P           each port, with _PROTO=r, _PORT=P and _ADDR=A
 *
 * A Service named after the product therefore yields TTLSTREAM_* names that no one chose: the config loader
 * ignores a variable whose name AND value have one of these shapes (decision 0027). The value is checked too, so
 * a misspelt setting that happens to end in _PORT (TTLSTREAM_METRIC_PORT=9464) is still refused.
 */

const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
/** A Service name made a variable name: DNS-1035 label, upper-cased, `-` → `_`. */
const SERVICE = '[A-Z][A-Z0-9_]*';
/** A port name made a variable name (IANA service name: letters, digits, `-`). */
const PORT_NAME = '[A-Z0-9_]+';

function isPort(text: string): boolean {
  if (!/^[1-9][0-9]{0,4}$/.test(text)) return false;
  return Number(text) <= 65535;
}

/** `r://A:P` as kubelet writes it (Go's net.JoinHostPort: an IPv6 address in brackets). */
function linkUrl(value: string): { protocol: string; address: string; port: string } | undefined {
  const m = /^(tcp|udp|sctp):\/\/(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):([0-9]+)$/.exec(value);
  if (!m) return undefined;
  const address = (m[2] ?? m[3]) as string;
  const ipv6 = m[2] !== undefined;
  if (isIP(address) !== (ipv6 ? 6 : 4) || !isPort(m[4] as string)) return undefined;
  return { protocol: m[1] as string, address, port: m[4] as string };
}

const HOST = new RegExp(`^${SERVICE}_SERVICE_HOST$`);
const SERVICE_PORT = new RegExp(`^${SERVICE}_SERVICE_PORT(?:_${PORT_NAME})?$`);
const FIRST_PORT = new RegExp(`^${SERVICE}_PORT$`);
const PORT_ENTRY = new RegExp(
  `^${SERVICE}_PORT_([1-9][0-9]{0,4})_(${PROTOCOLS.join('|')})(?:_(PROTO|PORT|ADDR))?$`,
);

/** Whether `name=value` is a variable the kubelet makes for a Service (see above): name and value both fit. */
export function isServiceLinkVariable(name: string, value: string): boolean {
  return (
    (HOST.test(name) && isIP(value) !== 0) ||
    (SERVICE_PORT.test(name) && isPort(value)) ||
    (FIRST_PORT.test(name) && linkUrl(value) !== undefined) ||
    isPortEntry(name, value)
  );
}

/** `<SERVICE>_PORT_<P>_<R>` and its `_PROTO`, `_PORT`, `_ADDR`: the value must agree with the name's port and protocol. */
function isPortEntry(name: string, value: string): boolean {
  const entry = PORT_ENTRY.exec(name);
  if (!entry) return false;
  const port = entry[1] ?? '';
  const protocol = (entry[2] ?? '').toLowerCase();
  switch (entry[3]) {
    case undefined: {
      const url = linkUrl(value);
      return url !== undefined && url.protocol === protocol && url.port === port;
    }
    case 'PROTO':
      return value === protocol;
    case 'PORT':
      return value === port;
    default:
      return isIP(value) !== 0; // ADDR
  }
}

/** The Service a link variable was made for, as its name was written (`TTLSTREAM_API_PORT` → `ttlstream-api`). */
export function serviceOfLink(name: string): string {
  const m = /^(.*?)_(?:SERVICE_HOST|SERVICE_PORT.*|PORT.*)$/.exec(name);
  return (m?.[1] ?? name).toLowerCase().replace(/_/g, '-');
}
