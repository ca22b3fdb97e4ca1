import type { FastifyInstance } from 'fastify';

/** One route path (`/tables/:table/ttl`) as a pattern over request paths, with the methods served there. */
interface PathMethods {
  template: string;
  pattern: RegExp;
  methods: Set<string>;
}

/** `/tables/:table/ttl` → a pattern that a request path of that route matches (a parameter is one segment). */
function patternOf(template: string): RegExp {
  const source = template
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source}$`);
}

/**
 * The methods each route path serves, gathered as the routes are added (fastify's `onRoute` hook, so every route
 * of every plugin is in it, HEAD of a GET route included), so that a request for a path that exists with a method
 * it does not serve is answered 405 with `Allow` listing those (RFC 9110), not 404: fastify's router finds no route
 * in both cases.
 */
export class RouteMethods {
  private readonly paths = new Map<string, PathMethods>();

  /** Gather the routes `app` is given from now on (call before registering them). */
  static of(app: FastifyInstance): RouteMethods {
    const routes = new RouteMethods();
    app.addHook('onRoute', (route) => routes.add(route.url, route.method));
    return routes;
  }

  add(template: string, method: string | readonly string[]): void {
    const entry = this.paths.get(template) ?? {
      template,
      pattern: patternOf(template),
      methods: new Set<string>(),
    };
    for (const m of typeof method === 'string' ? [method] : method) entry.methods.add(m.toUpperCase());
    this.paths.set(template, entry);
  }

  /** The methods served at a request path (no query), sorted; none when no route has the path. */
  allowedAt(path: string): string[] {
    const allowed = new Set<string>();
    for (const entry of this.paths.values())
      if (entry.pattern.test(path)) for (const m of entry.methods) allowed.add(m);
    return [...allowed].sort();
  }
}
