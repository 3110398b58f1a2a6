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

# A daemon killed without cleanup (a machine's processes end with its session) leaves pid files
# behind, and dockerd refuses to start over them. Remove them when no such process runs.
for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
  pid=$(cat "$pidfile" 2>/dev/null || true)
  # Alive means: that pid is a dockerd/containerd and not a zombie (no init may reap it here).
  if [ -f "$pidfile" ] && ! { grep -qsx -e dockerd -e containerd "/proc/$pid/comm" \
       && ! grep -qs '^State:[[:space:]]*Z' "/proc/$pid/status"; }; then
    say "removing stale $pidfile"
    rm -f "$pidfile"
  fi
done

say "starting dockerd (log: $log) ..."
# No init system on these machines: run the daemon in the background, detached from this shell.
nohup setsid dockerd >"$log" 2>&1 </dev/null &
daemon=$!
deadline=$((SECONDS + wait_s))
until answers; do
  if ! kill -0 "$daemon" 2>/dev/null; then
    say "dockerd exited during start-up. Last lines of $log:"
    tail -n 20 "$log" >&2 || true
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    say "dockerd did not answer within ${wait_s}s. Last lines of $log:"
    tail -n 20 "$log" >&2 || true
    say "fix: read the log above; a stale /var/run/docker.pid or docker.sock may need removing."
    exit 1
  fi
  sleep 0.2
done
say "engine answers ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
