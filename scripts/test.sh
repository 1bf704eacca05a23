#!/usr/bin/env bash
# The test command: installs what the tests need, then runs them.
#   - a virtual environment in .venv with agent-loop and its `test` and `docs` extras (the
#     tests build the documentation site too, tests/project/test_docs.py)
#   - the pinned Claude Code CLI in tests/claude-cli and Codex CLI in tests/codex-cli (npm ci,
#     from their package-lock.json files)
#   - jj, built once per machine from crates.io by scripts/install-jj.sh
#   - bubblewrap for the --sandbox tests, from the system's packages when we are root on a
#     Debian-like system (CI); elsewhere those tests skip and say why
#   - Chromium for the dashboard's browser tests (Debian's `chromium`, driven by Playwright),
#     installed with apt where this runs as root; elsewhere those tests say they are skipped
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test,docs]'
npm ci --prefix tests/claude-cli --no-audit --no-fund --loglevel=error
npm ci --prefix tests/codex-cli --no-audit --no-fund --loglevel=error
jj_dir=$(bash scripts/install-jj.sh | tail -n 1)
export PATH="$jj_dir:$PATH"
jj --version
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
then
    apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null \
        || echo "could not install bubblewrap: the --sandbox tests will skip" >&2
fi
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
        >/dev/null || echo "could not install chromium: the browser tests will skip" >&2
fi
.venv/bin/python -m pytest "$@"
