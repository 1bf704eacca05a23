"""--sandbox, in your checkout: an agent points a submodule's `.git` at a git folder of its own
(a filter in its config that git would run as you), and that `.git` cannot be moved at all,
neither under `.agent-loop/` nor beside itself: the submodule's folder is read-only to you, its
`.git` file writable (a vendored folder you keep read-only, a checkout another tool manages).
The run stops there. Nothing of agent-loop's may run git in the checkout after it (its git
would descend into the submodule and run the filter), nothing of yours or the agent's is lost,
and the stop is one line that says what to do. Real bubblewrap, real git, real permissions:
as root (who writes anything) the run goes through a user namespace of its own, where it is an
ordinary user, as it would be on your machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.test_git_config_escape import FILTER, with_submodule
from tests.sandbox.test_hooks import hooked
from tests.sandbox.test_sandbox_real import needs_bwrap
from tests.support.repos import git

# The agent's own copy of the submodule's git folder, the filter in its config and named for
# every file by its info/attributes (the folder holds no .gitattributes it could write), then
# the submodule's `.git` file rewritten in place to name it, and a file for the filter to clean.
POINTED = ("e=~/.claude/ev; cp -r .git/modules/deps/lib $e && "
           "git config -f $e/config core.worktree $PWD/deps/lib && "
           "git config -f $e/config {filter} && mkdir -p $e/info && "
           "echo '* filter=evil' > $e/info/attributes && echo \"gitdir: $e\" > deps/lib/.git; "
           "touch -d 2001-01-01 deps/lib/lib.txt")
AS_A_USER = ["unshare", "--user", "--map-user=1000", "--map-group=1000"]


def ordinary_user() -> list[str]:
    """The prefix that runs a command as an ordinary user whose files these are: none when this
    is one; a skip where root cannot become one here (no user namespaces for unshare)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("unshare") is None:
        pytest.skip("runs as root, who renames in a read-only folder, and has no `unshare` to "
                    "run as an ordinary user")
    done = subprocess.run([*AS_A_USER, "sh", "-c", "d=$(mktemp -d) && touch $d/f && "
                           "chmod 555 $d && ! mv $d/f $d/g 2>/dev/null; r=$?; "
                           "chmod 755 $d; rm -rf $d; exit $r"],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"runs as root, who renames in a read-only folder, and `unshare --user` "
                    f"cannot make an ordinary user here: {done.stderr.strip()[:200]}")
    return AS_A_USER


def run(work: Path, env: dict[str, str], prefix: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git", "--no-distill",
         "--sandbox", "--workplace", "checkout", "--no-git-hooks", "--allow-dirty"],
        cwd=work, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def stuck(tmp_path: Path) -> tuple[Path, dict[str, str], subprocess.CompletedProcess[str]]:
    """The run above, its checkout and environment, and what it did."""
    prefix = ordinary_user()
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    (work / "notes.txt").write_text("mine, not committed\n")   # the user's own edit
    git(work, "add", "notes.txt")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt a\n"
                                   f"  FAKE: bash {POINTED.format(filter=FILTER)}\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    (work / "notes.txt").write_text("mine, changed, not committed\n")
    lib = work / "deps" / "lib"
    lib.chmod(0o555)
    try:
        done = run(work, env, prefix)
    finally:
        lib.chmod(0o755)
    return work, env, done


@needs_bwrap
def test_a_submodule_git_that_cannot_be_moved_stops_the_run_running_no_git_after(
        tmp_path: Path) -> None:
    work, env, done = stuck(tmp_path)
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out, out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "Traceback" not in out and "internal error" not in out, out
    assert done.returncode != 0, out
    # One line says it, and what to do.
    said = [line for line in out.splitlines() if "could not move deps/lib/.git" in line]
    assert len(said) == 1, out
    assert "Permission denied" in said[0] and "Move deps/lib/.git away yourself" in said[0], out
    assert "the attempt's files stay as the agent left them" in said[0], out
    # The agent's `.git` is where it was, for the user to look at.
    assert "gitdir:" in (work / "deps" / "lib" / ".git").read_text()
    # Nothing lost: the user's own edit and the agent's work are in the checkout as they were.
    assert (work / "notes.txt").read_text() == "mine, changed, not committed\n", out
    assert (work / "a.txt").read_text() == "a\n", out
    # The user does as the line says; the next run rolls the attempt's files back, keeps them
    # in a commit and says so, and runs the task again.
    (work / "deps" / "lib" / ".git").rename(tmp_path / "the-agents-git")
    git(work, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--",
        "deps/lib")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt again\n")
    again = run(work, env, [])
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "rolled back the unfinished task attempt an earlier run left behind" in out, out
    assert git(work, "show", "refs/agent-loop/rolled-back:a.txt") == "a\n"
    assert git(work, "show", "HEAD:a.txt") == "again\n"
    assert (work / "notes.txt").read_text() == "mine, changed, not committed\n", out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
