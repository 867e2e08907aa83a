#!/usr/bin/env bash
# Sets up this machine as the controller: a venv in .venv with the pinned requirements; with --test,
# the test suite's too and the apt tools the test hosts need (as root).
# Safe to run again; quick when done. The controller itself needs no apt package: a notebook that runs
# this after every reset installs none (PIP_CACHE_DIR on its persistent path keeps pip's downloads too).
set -euo pipefail
cd "$(dirname "$0")/.."
reqs=requirements.txt
setup_pip_version=26.3  # the controller venv's pip (Python 3.10+, as pyinfra 3.10 needs)
[ "${1:-}" = "--test" ] && reqs=requirements-test.txt

apt_needs=()
# the test bed's hosts (testbed/); the e2e tests make a standalone-Python stand-in from the controller's
# CPython (tests/e2e/artifacts.py); libfuse2: the test bed's slow /persist (testbed/throttle.py); zstd: the
# venv snapshot tests; the real parts users have (tests/e2e/test_registries.py): docker-registry (the CNCF distribution
# registry), skopeo to push into it, apache2-utils for its htpasswd; haproxy, the front a build upgrade
# switches (tasks/server/front_plan.py); libb64-0d, which NVIDIA's perf_analyzer (in the tritonclient wheel) links;
# squid, the corporate proxy with Basic authentication (testbed/proxy.py)
[ "${1:-}" = "--test" ] && apt_needs+=(debootstrap openssh-server openssh-client ca-certificates util-linux mount
  tar procps patchelf shellcheck libfuse2 zstd docker-registry skopeo apache2-utils haproxy libb64-0d squid)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for pkg in "${apt_needs[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
if ! cat requirements*.txt "$reqs" | cmp -s - .venv/.requirements.installed; then
  echo "setup: pip install -r $reqs"
  # pip itself first: the pip a venv starts with (23 here and on Debian 12) spends most of an install judging
  # every file each index page lists (cProfile: its Wheel.supported); 26.3 does it in about a third of the time.
  # (this machine's pip config names local indexes that may be absent: drop those notes)
  .venv/bin/python -m pip install -q --disable-pip-version-check "pip==$setup_pip_version" 2>&1 \
    | { grep -v "^WARNING: Location" || true; }
  .venv/bin/python -m pip install -q --disable-pip-version-check -r "$reqs" 2>&1 \
    | { grep -v "^WARNING: Location" || true; }
  cat requirements*.txt "$reqs" > .venv/.requirements.installed
fi
echo "setup: ready (.venv/bin/pyinfra $(.venv/bin/pyinfra --version 2>/dev/null | awk '{print $NF}'))"
