"""jj's main line for a parallel run: a lane's change goes under the main checkout's @ with its
change id kept, a conflicting one is put back with the main line untouched, and the user's own
edits in @ on the same file make it wait."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.jj import workspaces
from agentloop.vcs.jj.mainline import JjMainLine
from agentloop.vcs.landing import IntegrationConflict
from tests.support.repos import make_repo


def jj(repo: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", *args], cwd=repo).stdout.strip()


def one(repo: Path, revset: str, template: str = "change_id") -> str:
    return jj(repo, "log", "--no-graph", "-r", revset, "-T", template)


@pytest.fixture
def repo(tmp_path: Path, jj_bin: str) -> Path:
    root = make_repo(tmp_path / "repo", "jj", {"f.txt": "base\n"}, message="base")
    (root / ".agent-loop").mkdir()
    (root / ".agent-loop" / ".gitignore").write_text("*\n")
    return root


def lane_change(repo: Path, name: str, files: dict[str, str]) -> tuple[str, str]:
    """A described change in lane `name`'s workspace, and the workspace's @ name."""
    space = workspaces.open_jj(repo, name, one(repo, "@-"), fresh=False)
    for path, text in files.items():
        (space.path / path).write_text(text)
    jj(space.path, "commit", "-m", f"task of {name}")
    return one(space.path, "@-"), f"{space.branch}@"


def test_a_change_lands_under_the_users_at_with_its_id(repo: Path) -> None:
    main = JjMainLine(repo)
    change, wc = lane_change(repo, "1-a", {"a.txt": "a\n"})
    commit = main.land(change, wc)
    assert one(repo, "@-") == change and one(repo, change, "commit_id") == commit
    assert (repo / "a.txt").read_text() == "a\n"
    assert one(repo, f"{wc}-") == change  # the lane goes on from it


def test_a_conflict_is_put_back(repo: Path) -> None:
    main = JjMainLine(repo)
    left, left_wc = lane_change(repo, "1-left", {"f.txt": "left\n"})
    right, right_wc = lane_change(repo, "2-right", {"f.txt": "right\n"})
    main.land(left, left_wc)
    tip = main.tip()
    with pytest.raises(IntegrationConflict) as caught:
        main.land(right, right_wc)
    assert caught.value.files == ("f.txt",)
    assert main.tip() == tip and (repo / "f.txt").read_text() == "left\n"
    assert one(repo, "conflicts()") == ""


def test_the_users_edits_in_at_on_the_same_file_make_it_wait(repo: Path) -> None:
    said: list[str] = []
    main = JjMainLine(repo, on_wait=said.append)
    change, wc = lane_change(repo, "1-a", {"f.txt": "from the task\n"})
    (repo / "f.txt").write_text("the user's edit\n")
    before = main.tip()
    done: list[str] = []
    landing = threading.Thread(target=lambda: done.append(main.land(change, wc)))
    landing.start()
    landing.join(2.5)
    assert not done and main.tip() == before
    assert (repo / "f.txt").read_text() == "the user's edit\n"
    assert len(said) == 1 and "f.txt" in said[0]
    # The user takes their edit back (committing it would make the task conflict instead).
    (repo / "f.txt").write_text("base\n")
    landing.join(15)
    assert done and one(repo, "@-") == change
