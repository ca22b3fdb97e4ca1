import { Option } from 'commander';

/**
 * The --archive flag shared by the archive, audit, restore and replay commands: the archive location overrides
 * archive.url. Its own file so that `archive` and its subcommands do not import each other.
 */
export function archiveOverrides(opts: Record<string, unknown>): { archive?: { url: string } } {
  return typeof opts.archive === 'string' ? { archive: { url: opts.archive } } : {};
}

/** `--archive <url>`, the flag `archiveOverrides` reads; `roots` names the kinds of root the command takes. */
export function archiveOption(roots = 'file:///path or s3://bucket/prefix'): Option {
  return new Option('--archive <url>', `archive root (${roots}) instead of archive.url`);
}
