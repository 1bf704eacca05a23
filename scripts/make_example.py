"""Regenerate .agent-loop.example/: what a real run leaves behind, made by the tool's own code.

It runs `agent-loop` on a small task file in a throwaway git repository, with the test suite's
fake `claude` standing in for the real one and a check (`--check`) that catches the second
task's first try, and copies out tasks.md, state.json, events.jsonl and the logs.
Run it after a change to the state schema or the log format:

    .venv/bin/python scripts/make_example.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / ".agent-loop.example"
TASKS = """\
# Example task list

## Greeting
- Write hello.py that prints a greeting.
- Make hello.py greet the names given on its command line,
  or the world when there are none.
"""
# What the stand-in agent does for each task (see tests/support/fake_claude.py).
ACTIONS = {
    "Write hello.py that prints a greeting.": ['FAKE: write hello.py print("hello")',
                                               "FAKE: say I created hello.py; it prints hello."],
    # Its first try has a syntax error, which the check catches; the fix run repairs it.
    "Make hello.py greet the names given on its command line,": [
        'FAKE: write hello.py import sys; print("hello", *(sys.argv[1:] or ["world"])',
        "FAKE: say hello.py now greets each name given, or the world."],
    "Your work on this task is not done yet: the project's checks ran on your changes and one "
    "fails.": [
        'FAKE: write hello.py import sys; print("hello", *(sys.argv[1:] or ["world"]))',
        "FAKE: say I closed the parenthesis; hello.py runs again."],
}
# The user's check: hello.py, once it exists, must run.
CHECK = "test ! -e hello.py || python3 hello.py Ann"


def main() -> None:
    """Run the example and copy what it left into .agent-loop.example/ (agent-loop.toml and
    ci/ are written by hand and stay)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "project"
        work.mkdir()
        fake = Path(tmp) / "bin" / "claude"
        fake.parent.mkdir()
        source = (REPO / "tests" / "support" / "fake_claude.py").read_text()
        fake.write_text(f"#!{sys.executable}\n" + source.split("\n", 1)[1])
        fake.chmod(0o755)
        env = {**os.environ, "AGENT_LOOP_CLAUDE": str(fake), "NO_COLOR": "1", "IS_SANDBOX": "1",
               "FAKE_CLAUDE_STATE": str(Path(tmp) / "fake-state"),
               "FAKE_CLAUDE_DIRECTIVES": str(Path(tmp) / "actions.json"),
               "GIT_AUTHOR_NAME": "Example", "GIT_AUTHOR_EMAIL": "example@example.com",
               "GIT_COMMITTER_NAME": "Example", "GIT_COMMITTER_EMAIL": "example@example.com"}
        (Path(tmp) / "actions.json").write_text(json.dumps(ACTIONS))
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, check=True)
        (work / "tasks.md").write_text(TASKS)
        subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                        "--check", CHECK], cwd=work, env={**env, "SHELL": "/bin/sh"}, check=True)
        # Written by hand, not by a run, they stay: the example settings file, and ci/.
        TARGET.mkdir(exist_ok=True)
        for old in TARGET.iterdir():
            if old.name not in ("agent-loop.toml", "ci"):
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        shutil.copy(work / "tasks.md", TARGET / "tasks.md")
        shutil.copy(work / ".agent-loop" / "state.json", TARGET / "state.json")
        shutil.copytree(work / ".agent-loop" / "logs", TARGET / "logs")
        shutil.copy(work / ".agent-loop" / "events.jsonl", TARGET / "events.jsonl")
        # Temporary paths would change on every regeneration; show them as /PROJECT.
        for path in [TARGET / "state.json", TARGET / "events.jsonl",
                     *sorted((TARGET / "logs").iterdir())]:
            text = path.read_text(encoding="utf-8")
            text = text.replace(str(fake), "claude").replace(str(work), "/PROJECT")
            path.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(REPO)}/: " +
          ", ".join(sorted(p.name for p in TARGET.rglob("*") if p.is_file())))


if __name__ == "__main__":
    main()
