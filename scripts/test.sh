#!/usr/bin/env bash
# The test command: installs what the tests need, then runs them.
#   - a virtual environment in .venv with agent-loop and its `test` and `docs` extras (the
#     tests build the documentation site too, tests/test_docs.py)
#   - the pinned Claude Code CLI in tests/claude-cli and Codex CLI in tests/codex-cli (npm ci,
#     from their package-lock.json files)
#   - jj, built once per machine from crates.io by scripts/install-jj.sh
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
.venv/bin/python -m pytest "$@"
