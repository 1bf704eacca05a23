"""An agent that made a repository of its own in your checkout and `git add`ed it: its `.git` is
moved under `.agent-loop/` before agent-loop's git reads its config (agentloop.vcs.
submodule_gitdirs), and said as the agent ends, on stdout. However the task's landing then ends
(files the agent left unmerged, a commit that fails, Ctrl+C, an internal error), where that
`.git` went is said first on stderr, with the stop: a person whose stdout went to `| head`, or
who reads only the last lines, still learns it. Real git, agent-loop as a process (a launcher
makes the commit fail, stop or crash at one chosen instant), the fake claude."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo

# The agent's repository, with a commit, added to your index as a gitlink.
REPO = ("git init -q sub && cd sub && echo x > x.txt && git add x.txt && "
        "git -c user.name=a -c user.email=a@b commit -qm x && cd .. && git add sub")
# README.md left unmerged (stages 2 and 3, no merge under way), as a conflicted `stash pop` does.
UNMERGED = (" && git rm -q --cached README.md && b=$(echo theirs | git hash-object -w --stdin)"
            " && printf '100644 %s 2\\tREADME.md\\n100644 %s 3\\tREADME.md\\n' $b $b"
            " | git update-index --index-info")

# Runs agent-loop with the task's commit in your checkout (`git ... commit`, or `git commit-tree`
# where the commit's tree is built first: a repository's files taken as plain files) made to fail
# ("fail": it, and the `commit-tree` tried after it, replaced by a command that exits 1), or
# followed by a Ctrl+C ("stop") or by an exception nobody expected ("crash").
LAUNCHER = """
import os, signal
from agentloop.proc import commands

how = os.environ["AT_COMMIT"]
COMMIT = " maintenance.auto=false commit "

def ours(argv):  # the task's commit: `git commit`, or `commit-tree` where its files are built
    said = " ".join(argv) + " "
    return COMMIT in said or " commit-tree " in said

real_launch = commands._launch
def _launch(argv, *rest):
    if how == "fail" and ours(argv):
        argv = ["sh", "-c", "echo 'pre-commit: hook says no' >&2; exit 1"]
    return real_launch(argv, *rest)
commands._launch = _launch

real_finished = commands._finished
def _finished(child, argv, *rest):
    found = real_finished(child, argv, *rest)
    if ours(argv) and how == "stop":
        os.kill(os.getpid(), signal.SIGINT)
    if ours(argv) and how == "crash":
        raise RuntimeError("boom")
    return found
commands._finished = _finished

from agentloop.__main__ import main
main()
"""

WAYS = {"unmerged": ("none", UNMERGED, "agent-loop: error: the agent left README.md unmerged"),
        "commit fails": ("fail", "", "agent-loop: error: "),
        "ctrl-c": ("stop", "", "agent-loop: interrupted"),
        "internal error": ("crash", "", "agent-loop: internal error: RuntimeError('boom')")}


@pytest.mark.parametrize("way", list(WAYS))
def test_where_the_agents_git_folder_went_is_said_first_on_every_way_out(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, way: str) -> None:
    how, extra, last = WAYS[way]
    init_repo(work, "git")
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {REPO}"
                                   f"{extra}\n")
    done = subprocess.run([sys.executable, "-c", LAUNCHER, "tasks.md", "--vcs", "git",
                           "--workplace", "checkout", "--no-distill"], cwd=work,
                          env={**os.environ, "NO_COLOR": "1", "AT_COMMIT": how,
                               "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "moved sub/.git" in done.stdout, done.stdout  # as the agent ended
    err = done.stderr.strip().splitlines()
    assert err and "Traceback" not in done.stderr, done.stderr
    said = [n for n, line in enumerate(err) if "moved sub/.git" in line and
            ".agent-loop/submodule-git-folders/sub/.git" in line]
    stop = [n for n, line in enumerate(err) if line.startswith(last)]
    assert said and stop and said[0] < stop[0], done.stderr
    assert (work / ".agent-loop" / "submodule-git-folders" / "sub" / ".git" / "HEAD").is_file()
