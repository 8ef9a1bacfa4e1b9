#!/usr/bin/env bash
# One-step setup on a fresh machine: the package with its test tools, and Debian's Chromium
# for the browser tests (never a browser downloaded by a test tool).
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
echo "crowdprefs installed: try 'crowdprefs demo', then 'pytest'"
