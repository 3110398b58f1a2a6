#!/usr/bin/env bash
# Ensure a Docker engine answers: start dockerd (installing Debian's docker.io first if needed).
# Used by the README's set-up (make) and by .ci/run. Exits non-zero with a message saying what to do.
set -euo pipefail

log="${ARENA_DOCKERD_LOG:-/var/log/arena-dockerd.log}"
wait_s="${ARENA_DOCKERD_WAIT:-60}"

answers() { docker info >/dev/null 2>&1; }
say() { printf 'ensure-docker: %s\n' "$*" >&2; }

if answers; then say "engine answers ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"; exit 0; fi

if [ "$(id -u)" != 0 ]; then
  say "no Docker engine answers and this user is not root."
  say "fix: start Docker (e.g. 'sudo dockerd &' or 'sudo systemctl start docker') and make sure"
  say "     your user may use it ('sudo usermod -aG docker \$USER', then log in again)."
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    say "no Docker engine answers, dockerd is not installed and this is not a Debian-like system."
    say "fix: install Docker Engine (https://docs.docker.com/engine/install/) and start it."
    exit 1
  fi
  say "installing Debian's docker.io (and debootstrap for the base image) ..."
  apt-get update -qq || say "apt-get update reported errors; trying the install anyway"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi

say "starting dockerd (log: $log) ..."
# No init system on these machines: run the daemon in the background, detached from this shell.
nohup setsid dockerd >"$log" 2>&1 </dev/null &
deadline=$((SECONDS + wait_s))
until answers; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    say "dockerd did not answer within ${wait_s}s. Last lines of $log:"
    tail -n 20 "$log" >&2 || true
    say "fix: read the log above; a stale /var/run/docker.pid or docker.sock may need removing."
    exit 1
  fi
  sleep 0.2
done
say "engine answers ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
