"""Repositories of each kind for the tests, made and read with the real git and jj.

The kinds a user has: `git`; `jj` (what `jj git init` makes: since jj 0.3x a colocated
repository, `.jj` and `.git` side by side); `colocated` (a git user's repository with its
history, into which jj was later initialized with `jj git init --colocate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import orjson

from agentloop import proc

KINDS = ("git", "jj", "colocated")


def git(work: Path, *args: str) -> str:
    """git's standard output (a failure raises, with git's own message)."""
    return proc.run(["git", *args], cwd=work).stdout


def agent_git(work: Path, *args: str) -> str:
    """git as the agent's own commands run it: with the mark agent-loop gives the agent's
    environment (its commits' entries in HEAD's reflog say they are the agent's)."""
    from agentloop import AGENT_REFLOG_ACTION
    from agentloop.proc.environ import current

    return proc.run(["git", *args], cwd=work,
                    env={**current(), "GIT_REFLOG_ACTION": AGENT_REFLOG_ACTION}).stdout


def jj(work: Path, *args: str) -> str:
    """jj's standard output, never paged or coloured (a failure raises)."""
    return proc.run(["jj", "--no-pager", "--color=never", *args], cwd=work).stdout


def init_repo(work: Path, kind: str) -> None:
    """Make `work` a repository of `kind`; git's (and colocated's) holds README.md committed."""
    if kind not in KINDS:
        raise ValueError(f"no repository kind {kind!r}: one of {', '.join(KINDS)}")
    if kind == "jj":
        jj(work, "git", "init")
        return
    git(work, "init", "-q")
    git(work, "add", "README.md")
    git(work, "commit", "-qm", "initial")
    if kind == "colocated":
        jj(work, "git", "init", "--colocate")


def make_repo(root: Path, kind: str = "git", files: Mapping[str, str] | None = None,
              plan: str | None = None, message: str = "initial") -> Path:
    """`root` made (with `files`, a README by default) as a repository of `kind`, the files
    committed as `message` on main; `plan`, if given, written as an untracked tasks.md after."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"README.md": "hello\n"}).items():
        (root / name).write_text(text)
    if kind == "jj":
        jj(root, "git", "init")
        jj(root, "commit", "-m", message)
    else:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-qm", message)
        if kind == "colocated":
            jj(root, "git", "init", "--colocate")
        elif kind != "git":
            raise ValueError(f"no repository kind {kind!r}: one of {', '.join(KINDS)}")
    if plan is not None:
        (root / "tasks.md").write_text(plan)
    return root


def committed_plan(work: Path, plan: str) -> Path:
    """`plan` written as tasks.md in the git repository `work` and committed ("the plan"), as a
    user keeps the plan a run reads; `work`."""
    (work / "tasks.md").write_text(plan)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "the plan")
    return work


def git_project(tmp_path: Path, plan: str) -> Path:
    """tmp_path/project: a git repository with its README committed, and `plan` as tasks.md."""
    return make_repo(tmp_path / "project", "git", plan=plan)


def state_of(work: Path) -> dict:
    """The plan's saved state (.agent-loop/state.json), as JSON."""
    return orjson.loads((work / ".agent-loop" / "state.json").read_bytes())


def tasks_of(work: Path) -> list[dict]:
    """The plan's task records, as the saved state holds them."""
    return list(state_of(work)["tasks"])


def jj_changes(work: Path) -> list[tuple[str, str, list[str]]]:
    """(change id, description, files) of every described change, oldest first."""
    out = jj(work, "log", "--no-graph", "-r", "::@ & description(glob:'agent-loop:*')", "-T",
             'change_id ++ "\t" ++ description.first_line() ++ "\t" ++ '
             'self.diff().files().map(|f| f.path()).join(",") ++ "\n"')
    rows = [line.split("\t") for line in out.splitlines()]
    return [(c, d, f.split(",") if f else []) for c, d, f in reversed(rows)]


def git_commits(work: Path) -> list[tuple[str, str, list[str]]]:
    """(sha, subject, files) of every agent-loop commit on HEAD, oldest first."""
    out = git(work, "log", "--reverse", "--format=%H%x09%s")
    rows = []
    for line in out.splitlines():
        sha, subject = line.split("\t")
        if subject.startswith("agent-loop:"):
            files = git(work, "show", "--name-only", "--format=", sha).split()
            rows.append((sha, subject, files))
    return rows
