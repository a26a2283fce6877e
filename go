#!/usr/bin/env bash
# ./go COMMAND...  — make this machine ready for refenv, then run COMMAND in the project's environment.
#
#   ./go invoke matrix      the main job: build every environment, run every cell, write the report
#   ./go invoke test        the tests (unit, docker, slurm and browser tiers; the gpu tier too where a GPU is)
#
# On a fresh Debian machine it installs what is missing (Docker engine, Podman, debootstrap, a C compiler,
# the loopback registry used by the publish tests, npm and Chromium for the paste page and its tests),
# starts the Docker engine if none answers, and
# creates .venv with refenv and its development tools. Each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
say() { printf '\033[1m▸ %s\033[0m\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  echo "refenv: '$*' needs root; run ./go as root or install sudo" >&2; exit 1; fi; }

# 1. System packages (Debian names). docker.io brings dockerd and containerd; the client may exist alone.
need=()
# Debian's python3 comes without venv's ensurepip (python3-venv), and `python3 -m venv` fails without it.
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v cc >/dev/null || need+=(gcc)
[ -e /usr/include/stdio.h ] || need+=(libc6-dev)
command -v docker-registry >/dev/null || need+=(docker-registry)
# Podman, the second engine (`invoke matrix --engine podman`, the podman test tier); daemonless, nothing to start.
command -v podman >/dev/null || need+=(podman)
# The paste page: npm fetches its Pyodide (`invoke web`), headless Chromium runs the browser tier.
command -v npm >/dev/null || need+=(npm)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. A Docker engine that answers. Started in the background when none does (no systemd needed).
if ! docker info >/dev/null 2>&1; then
  say "starting the Docker engine (dockerd; log: /var/log/refenv-dockerd.log)"
  as_root sh -c 'nohup setsid dockerd >/var/log/refenv-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "refenv: dockerd did not come up; see /var/log/refenv-dockerd.log" >&2
                                   tail -n 20 /var/log/refenv-dockerd.log >&2 || true; exit 1; }
fi

# 3. The project's virtual environment, rebuilt when pyproject.toml changes.
stamp=.venv/.refenv-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "creating .venv with refenv and its development tools"
  python3 -m venv .venv
  # pip's own chatter goes to a log; its errors are shown when it fails.
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[dev]'; } \
      >.venv/install.log 2>&1; then
    tail -n 30 .venv/install.log >&2; echo "refenv: installing into .venv failed (log: .venv/install.log)" >&2; exit 1
  fi
  echo "$want" > "$stamp"
fi

[ $# -gt 0 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
export PATH="$ROOT/.venv/bin:$PATH"
# `./go invoke ...` runs tasks.py through refenv's program (refenv/cli.py): invoke's own, except that a usage
# error (an unknown or doubled flag, a missing value) exits 2, not 1, which means cells that disagree.
case "$1" in
  invoke|inv) shift; exec python -m refenv.cli --as invoke "$@" ;;
esac
exec "$@"
