#!/usr/bin/env bash
# Build the documentation site into docs/_build/html, warnings as errors (a broken link or a
# page in no table of contents fails it). Installs the `docs` extra into .venv when it is not
# there yet. Extra arguments go to sphinx-build (e.g. -b linkcheck).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/sphinx-build ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install --quiet -e '.[docs]'
fi
.venv/bin/sphinx-build -W --keep-going -n -q -b html "$@" docs docs/_build/html
echo "docs: open docs/_build/html/index.html"
