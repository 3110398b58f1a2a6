#!/usr/bin/env bash
# Ensure Debian's headless browser and its driver are installed (the viewer's browser tests drive
# them through Selenium). Debian's packages only: never a downloaded browser build. Idempotent.
# Used by `make test`. Exits non-zero with a message saying what to do.
set -euo pipefail

say() { printf 'ensure-chromium: %s\n' "$*" >&2; }

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  say "present ($(chromium --version 2>/dev/null | head -1))"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "chromium and chromedriver are not installed, and this is not root on a Debian-like system."
  say "fix: sudo apt-get install chromium chromium-driver (or deselect the browser tests: -m 'not browser')"
  exit 1
fi
say "installing Debian's chromium and chromium-driver ..."
apt-get update -qq || say "apt-get update reported errors; trying the install anyway"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
say "installed ($(chromium --version 2>/dev/null | head -1))"
