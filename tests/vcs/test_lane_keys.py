"""A plan's lane key per checkout of a repository (agentloop.vcs.lanes.linked_checkout): the
main checkout's is the key it always was, a linked checkout's (git worktree, jj workspace) its
own."""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs import lanes
from tests.support.repos import git, init_repo, jj


def test_each_checkout_names_its_own_lanes(tmp_path: Path, jj_bin: str) -> None:
    main = tmp_path / "main"
    main.mkdir()
    (main / "README.md").write_text("hello\n")
    init_repo(main, "git")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    git(main, "worktree", "add", "-q", str(tmp_path / "rel"), "-b", "rel")
    # As git >= 2.48 writes it with worktree.useRelativePaths.
    (tmp_path / "rel" / ".git").write_text("gitdir: ../main/.git/worktrees/rel\n")
    assert lanes.linked_checkout(main) == ""
    assert lanes.plan_key("tasks.md", lanes.linked_checkout(main)) == "tasks.c63cd8"
    assert lanes.linked_checkout(tmp_path / "wt") == "wt"
    assert lanes.linked_checkout(tmp_path / "rel") == "rel"
    assert lanes.plan_key("tasks.md", "wt") not in ("tasks.c63cd8", lanes.plan_key("tasks.md",
                                                                                    "rel"))
    # A submodule's `.git` file names its repository's own git dir: a main checkout.
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: {main / '.git' / 'modules' / 'sub'}\n")
    assert lanes.linked_checkout(sub) == ""
    first = tmp_path / "jjmain"
    first.mkdir()
    init_repo(first, "jj")
    jj(first, "workspace", "add", "--name", "second", str(tmp_path / "jjwt"))
    assert lanes.linked_checkout(first) == ""
    assert lanes.linked_checkout(tmp_path / "jjwt") == "second"
