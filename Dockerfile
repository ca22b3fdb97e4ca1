# ttlstream as a container image (docs/deployment.md). Build: `docker build -t ttlstream .`
# Run one role per container: `docker run -e TTLSTREAM_... ttlstream run --roles scanner` (deploy/k8s/ does so).
# Node 24, as the project (docs/decisions/0015-node-24.md); pin the digest in your own registry.
#
# BASE_IMAGE: the official node image by default; scripts/build-image.sh passes a stand-in made from Debian and npm
# packages where no image registry can be reached (docs/decisions/0027-image-in-ci.md).
# Behind a TLS-intercepting proxy, or with a private npm registry, lend the build npm's settings as build secrets
# (never copied into a layer): `--secret id=npmrc,src=$HOME/.npmrc --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt`.
ARG BASE_IMAGE=node:24.22.3-slim

# --- build: compile the TypeScript and keep the production dependencies only
FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Install scripts are not needed: nothing native is used at run time (the build tools' own are skipped too).
RUN --mount=type=secret,id=npmrc,required=false \
  --mount=type=secret,id=ca,required=false \
  if [ -f /run/secrets/npmrc ]; then export NPM_CONFIG_USERCONFIG=/run/secrets/npmrc; fi; \
  if [ -f /run/secrets/ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/ca; fi; \
  npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm run build \
  && npm prune --omit=dev --ignore-scripts \
  && chmod 0755 dist/cli/main.js

# --- runtime: the compiled code, its dependencies and the Avro schemas, run as the image's unprivileged `node` user
FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
  # Every port listens on all interfaces: a container's ports are reached through its address, not loopback.
  TTLSTREAM_API_HOST=0.0.0.0 \
  # /metrics, /healthz and /readyz of a process without the API role (the API serves them on api.port, 8080).
  TTLSTREAM_METRICS_PORT=9464
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/schemas/avro ./schemas/avro
COPY deploy/docker/healthcheck.cjs ./healthcheck.cjs
RUN ln -s /app/dist/cli/main.js /usr/local/bin/ttlstream
# The image's unprivileged `node` user, by number: Kubernetes checks runAsNonRoot against a numeric user.
USER 1000:1000
EXPOSE 8080 9464
# /healthz on the metrics port, else on the API port (a process with the API role serves it there).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/app/healthcheck.cjs"]
ENTRYPOINT ["ttlstream"]
CMD ["run"]
