#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: Java 17, Debian packages, the project virtualenv, the Python
# dependencies, and the offline Iceberg runtime jars (cached outside the repository).
#   scripts/setup.sh            what the demo needs
#   scripts/setup.sh --test     plus what the tests need (Chromium for the browser test, PostgreSQL for the
#                               shared-catalog test)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=()
command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
[ -f /usr/share/java/jarjar.jar ] || packages+=(libjarjar-java)
if [ "${1:-}" = "--test" ]; then
  command -v chromium >/dev/null 2>&1 || packages+=(chromium)
  # the shared-catalog test starts a throw-away PostgreSQL cluster (tests/catalog/postgres_cluster.py)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || packages+=(postgresql)
fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${packages[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi

.venv/bin/python -m mt_magic.runtime.spark.iceberg_jars >/dev/null
echo "setup: ready"
