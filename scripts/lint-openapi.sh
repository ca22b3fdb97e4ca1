#!/usr/bin/env bash
# `npm run lint`'s check of the control plane's OpenAPI document: docs/openapi.json (a unit test keeps it equal to
# what the server serves) against the OpenAPI 3.1 specification, with openapi-spec-validator from the api-tools venv
# (scripts/ensure-api-tools.sh, made once per machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/ensure-api-tools.sh
infra/run/api-tools/bin/openapi-spec-validator docs/openapi.json
