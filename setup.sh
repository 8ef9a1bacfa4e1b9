#!/usr/bin/env bash
# One-step setup on a fresh machine: the package with its test and docs tools, Debian's Chromium
# for the browser tests (never a browser downloaded by a test tool) and Debian's PostgreSQL
# server for the tests that run the store on it.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e '.[dev]'
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: /usr/bin/chromium is missing; run 'sudo apt-get install chromium' for the browser tests" >&2
  fi
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then  # the tests that run the store on PostgreSQL start a throwaway one
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "note: PostgreSQL is missing; run 'sudo apt-get install postgresql' for its tests" >&2
  fi
fi
echo "crowdprefs installed: try 'crowdprefs demo', then 'pytest'"
