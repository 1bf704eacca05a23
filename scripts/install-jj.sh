#!/usr/bin/env bash
# Builds the pinned jj from crates.io once per machine and reuses it afterwards.
# jj is packaged for neither Debian, PyPI nor npm here; cargo is the one way in.
# Prints the directory holding the jj binary on its last line.
set -euo pipefail
JJ_VERSION="${AGENT_LOOP_JJ_VERSION:-0.45.1}"
root="${AGENT_LOOP_TOOLS:-$HOME/.cache/agent-loop-tools}/jj-$JJ_VERSION"
if [ -x "$root/bin/jj" ]; then
  echo "$root/bin"
  exit 0
fi
# Without a working cargo (none installed, or rustup with no default toolchain) cargo's own
# failure is a rustup backtrace; say in one line what is missing and how to get it.
if ! cargo --version >/dev/null 2>&1; then
  echo "install-jj.sh: jj $JJ_VERSION is not built yet (in $root) and cargo does not work here" \
    "(\`cargo --version\` failed): install Rust from https://rustup.rs (then \`rustup default" \
    "stable\`), or build jj $JJ_VERSION yourself into $root/bin" >&2
  exit 1
fi
start=$(date +%s)
# A lighter release profile: the tests need a working jj, not the fastest one.
CARGO_PROFILE_RELEASE_LTO=false \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
CARGO_PROFILE_RELEASE_DEBUG=0 \
CARGO_PROFILE_RELEASE_STRIP=true \
  cargo install --locked --quiet jj-cli --version "$JJ_VERSION" \
    --no-default-features --features git --root "$root" >&2
echo "jj $JJ_VERSION built in $(( $(date +%s) - start ))s" >&2
echo "$root/bin"
