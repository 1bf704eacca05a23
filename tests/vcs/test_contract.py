"""The Vcs protocol's contract, run against both backends on real repositories: what the run core
may count on whether jj or git is underneath. Each backend's own behaviour (git's dirty-tree
rules and crash recovery, jj's base change and auto-track) is in test_vcs_git.py / test_vcs_jj.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from agentloop import proc
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.jj.backend import JjVcs
from agentloop.vcs.protocol import Change, Vcs
from tests.support.repos import agent_git, make_repo


def sh(repo: Path, *argv: str) -> str:
    return proc.run(list(argv), cwd=repo).stdout


class Backend:
    """One backend as the contract sees it: a repository, and how to read its task changes."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root = kind, root
        make_repo(root, kind, plan="## One\n- [ ] a\n")

    def open(self, task_file: str = "tasks.md") -> Vcs:
        vcs: Vcs = (GitVcs(self.root, self.root / task_file) if self.kind == "git"
                    else JjVcs(self.root, self.root / task_file))
        vcs.prepare()
        return vcs

    def history(self) -> list[tuple[str, list[str]]]:
        """(subject, files) of every commit or described change, newest first."""
        if self.kind == "git":
            out = sh(self.root, "git", "log", "--format=%x00%s", "--name-only")
            rows = [r.strip("\n").split("\n") for r in out.split("\x00") if r.strip()]
            return [(r[0], sorted(x for x in r[1:] if x)) for r in rows]
        out = sh(self.root, "jj", "--no-pager", "log", "--no-graph", "-r", "::@", "-T",
                 'description.first_line() ++ "\t" ++ '
                 'self.diff().files().map(|f| f.path()).join(",") ++ "\n"')
        rows = [line.split("\t") for line in out.splitlines()]
        return [(d, sorted(f.split(",")) if f else []) for d, f in rows if d]

    def undo(self, change: Change) -> None:
        """What the README tells the user to type to take one task back."""
        if self.kind == "git":
            sh(self.root, "git", "revert", "--no-edit", change.change_id)
        else:
            sh(self.root, "jj", "--no-pager", "abandon", change.change_id)

    def agent_commits(self, message: str) -> None:
        """The agent commits its own work, as it was told not to."""
        if self.kind == "git":
            sh(self.root, "git", "add", "-A", ":!tasks.md")
            agent_git(self.root, "commit", "-q", "-m", message)
        else:
            sh(self.root, "jj", "--no-pager", "commit", "-m", message)


@pytest.fixture(params=["git", "jj"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "jj":
        request.getfixturevalue("jj_bin")
    root = tmp_path / "project"
    root.mkdir()
    return Backend(request.param, root)


def task(vcs: Vcs, root: Path, message: str, files: dict[str, str],
         also: Callable[[], None] = lambda: None) -> Change:
    change = vcs.begin(message)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    # The tool's own files change while the task's change is open: never part of it.
    (root / "tasks.md").write_text((root / "tasks.md").read_text() + f"- [x] {message}\n")
    (root / ".agent-loop").mkdir(exist_ok=True)
    (root / ".agent-loop" / "state.json").write_text(message)
    also()
    return vcs.finish(change, message)


def test_each_task_is_one_change_with_its_files_and_one_undoes_alone(backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    done = [task(vcs, root, f"task {n}", {f"t{n}.txt": f"{n}\n"}) for n in (1, 2, 3)]
    vcs.close()
    assert backend.history() == [("task 3", ["t3.txt"]), ("task 2", ["t2.txt"]),
                                 ("task 1", ["t1.txt"]), ("initial", ["README.md"])]
    assert [c.files for c in done] == [("t1.txt",), ("t2.txt",), ("t3.txt",)]
    assert all(c.change_id and c.commit_id and not c.empty for c in done)
    backend.undo(done[1])
    assert not (root / "t2.txt").exists()
    assert (root / "t1.txt").exists() and (root / "t3.txt").exists()
    assert (root / "tasks.md").read_text().count("- [x]") == 3  # the task file kept every tick


def test_abandoned_attempts_leave_nothing_behind(backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    for attempt in range(2):
        change = vcs.begin("task")
        (root / "new" / "deep").mkdir(parents=True)
        (root / "new" / "deep" / f"try{attempt}.txt").write_text("x\n")
        (root / "README.md").write_text("broken\n")
        vcs.abandon(change)
        vcs.abandon(change)  # twice is no error
        assert not (root / "new").exists()
        assert (root / "README.md").read_text() == "hello\n"
    done = task(vcs, root, "task", {"good.txt": "ok\n"})
    vcs.close()
    assert backend.history() == [("task", ["good.txt"]), ("initial", ["README.md"])]
    assert done.files == ("good.txt",)


def test_a_task_that_changes_nothing_leaves_no_change(backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    done = task(vcs, root, "nothing", {})
    vcs.close()
    assert done.empty and done.change_id == "" and done.files == ()
    assert backend.history() == [("initial", ["README.md"])]


def test_the_diff_is_git_format_and_holds_only_the_tasks_files(backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    change = vcs.begin("task")
    (root / "a.txt").write_text("new line\n")
    assert "+new line" in vcs.diff(change)
    done = vcs.finish(change, "task")
    patch = vcs.diff(done)
    assert patch.startswith("diff --git a/a.txt b/a.txt") and "tasks.md" not in patch


def test_file_names_are_names_never_patterns(backend: Backend) -> None:
    root = backend.root
    (root / "tasks.md").rename(root / 'my "tasks" [1].md')
    vcs = backend.open('my "tasks" [1].md')
    change = vcs.begin("task")
    (root / 'my "tasks" [1].md').write_text("- [x] a\n")
    (root / "[a].txt").write_text("a\n")
    (root / "*").write_text("star\n")
    assert vcs.finish(change, "task").files == ("*", "[a].txt")


def test_the_agents_own_commits_are_folded_into_the_tasks_change(backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    done = task(vcs, root, "task", {"a.txt": "a\n"},
                also=lambda: (backend.agent_commits("agent did this"),
                              (root / "b.txt").write_text("b\n")))
    vcs.close()
    assert done.files == ("a.txt", "b.txt")
    assert backend.history() == [("task", ["a.txt", "b.txt"]), ("initial", ["README.md"])]


def test_a_5_mb_file_is_part_of_the_change_and_an_abandon_takes_it_back(
        backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    change = vcs.begin("failed try")
    (root / "big.bin").write_bytes(b"\x00x" * (5 * 1024 * 1024 // 2))
    vcs.abandon(change)
    assert not (root / "big.bin").exists()
    done = task(vcs, root, "asset", {})
    assert done.empty
    change = vcs.begin("asset")
    (root / "asset.bin").write_bytes(b"y" * (5 * 1024 * 1024))
    assert vcs.finish(change, "asset").files == ("asset.bin",)
    vcs.close()
    assert backend.history()[0] == ("asset", ["asset.bin"])


def test_a_file_name_that_is_not_utf8(backend: Backend) -> None:
    vcs, root = backend.open(), backend.root
    name = b"caf\xe9.txt"
    change = vcs.begin("odd bytes")
    with open(os.path.join(os.fsencode(root), name), "wb") as out:
        out.write(b"x\n")
    done = vcs.finish(change, "odd bytes")
    # git commits it byte for byte; jj cannot track a path that is not UTF-8 at all (its
    # paths are text), so the file stays in the working copy, in no change: no crash either way.
    expected = [name] if backend.kind == "git" else []
    assert [os.fsencode(f) for f in done.files] == expected
    change = vcs.begin("again")
    with open(os.path.join(os.fsencode(root), b"na\xefve.txt"), "wb") as out:
        out.write(b"y\n")
    vcs.abandon(change)
    assert os.path.exists(os.path.join(os.fsencode(root), b"na\xefve.txt")) == (
        backend.kind == "jj")
