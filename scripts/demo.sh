#!/usr/bin/env bash
# The README's first command: agent-loop tried out on a fresh machine, offline and free.
#   - installs agent-loop from this checkout into a virtual environment of its own
#     ($AGENT_LOOP_VENV, default ~/.agent-loop-venv)
#   - makes a demo git repository ($AGENT_LOOP_DEMO, default ~/agent-loop-demo)
#   - writes the example plan there (tasks.md, kept if it is there already) and rehearses it
#     with the stand-in agent, which reaches no model and costs nothing
# Run again, it installs this checkout again and rehearses the same plan.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
venv=${AGENT_LOOP_VENV:-$HOME/.agent-loop-venv}
demo=${AGENT_LOOP_DEMO:-$HOME/agent-loop-demo}

echo "== installing agent-loop into $venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "$checkout"

echo "== a demo repository in $demo"
mkdir -p "$demo"
cd "$demo"
if ! git rev-parse --git-dir >/dev/null 2>&1; then
    git init -q
fi
# Commits need a name; the demo's own, so the machine's git config is left alone.
git config user.name >/dev/null || git config user.name "agent-loop demo"
git config user.email >/dev/null || git config user.email demo@example.com
if [ -e tasks.md ]; then
    echo "keeping the tasks.md that is there"
else
    "$venv/bin/agent-loop" tasks.md --init
fi

echo "== rehearsing tasks.md (a stand-in agent: offline, free)"
"$venv/bin/agent-loop" tasks.md --rehearse

cat <<EOF

== what next
cd $demo
export PATH="$venv/bin:\$PATH"    # so that \`agent-loop\` is found
agent-loop tasks.md --status    # each task, its change and its log
agent-loop --help               # every option, in sections, with examples
The README's quick start goes on from here.
EOF
