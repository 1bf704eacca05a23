"""A repository an agent makes inside yours (`git init app`, `git clone`, an `npm create` that
runs `git init`), which git lists as one folder and none of its files: its files land in the
task's commit as plain files, and the line says so (agentloop.vcs.git.nested); a lane's leftover
one is kept when the lane goes; one you made before the run is never taken for the agent's.
Real git, the fake claude running the git commands an agent would."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project, state_of
from tests.support.runner import agent_loop

NESTED = ("git init -q app && echo a > app/a.txt && printf 'x.log\\n' > app/.gitignore && "
          "echo l > app/x.log && git -C app add . && git -C app commit -qm app && "
          "git init -q app/lib && echo b > app/lib/b.txt")
TRACKED = ("git init -q src/newrepo && echo c > src/newrepo/c.txt && "
           "git -C src/newrepo add . && git -C src/newrepo commit -qm c")
NO_COMMIT = "mkdir -p fresh && git init -q fresh/r && echo d > fresh/r/d.txt"
VENV = ("mkdir -p venv/src && git init -q venv/src/pkg && echo e > venv/src/pkg/e.txt && "
        "git -C venv/src/pkg add . && git -C venv/src/pkg commit -qm e")


def project(tmp_path: Path, plan: str) -> Path:
    """A git project whose `src/` is tracked, `plan` as its tasks."""
    work = git_project(tmp_path, plan)
    (work / "src").mkdir()
    (work / "src/keep.txt").write_text("k\n")
    git(work, "add", "src")
    git(work, "commit", "-qm", "src")
    return work


def task_files(work: Path, index: int) -> list[str]:
    """The files task `index`'s commit holds."""
    sha = state_of(work)["tasks"][index - 1]["change_id"]
    assert sha, state_of(work)["tasks"][index - 1]
    return git(work, "show", "--name-only", "--format=", sha).split()


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_an_agents_repositories_files_land_in_its_tasks_commit(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """Left in no commit, unsaid (your checkout); with the lane (a lane), or its `git add`
    failed when one had no commit yet and the run ended on the error."""
    work = project(tmp_path, f"- make them\n  FAKE: bash {NESTED} && {TRACKED} && {NO_COMMIT}\n"
                   "  FAKE: write top.txt t\n- next\n  FAKE: write two.txt 2\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert task_files(work, 1) == ["app/.gitignore", "app/a.txt", "app/lib/b.txt",
                                   "fresh/r/d.txt", "src/newrepo/c.txt", "top.txt"]
    assert task_files(work, 2) == ["two.txt"]
    said = [line for line in done.stdout.splitlines()
            if "git repositories the agent made inside yours" in line]
    assert said and "app/, app/lib/, fresh/r/, src/newrepo/" in said[0], done.stdout
    assert "plain files" in said[0]
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"]
    assert (work / "app/lib/b.txt").read_text() == "b\n"
    assert not (work / "app/x.log").exists() or workplace == "checkout"  # ignored: not landed
    if workplace == "checkout":  # the agent's repositories stay as it left them
        assert (work / "app/.git").is_dir() and (work / "app/lib/.git").is_dir()
    assert git(work, "status", "--porcelain", "--untracked-files=all", "--", "app", "src",
               "fresh") == ""


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_an_agents_repository_under_a_venv_lands_and_the_lane_goes(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """venv/ with no .gitignore entry: the task landed without the repository's files, the
    lane's removal failed on `git add` (exit 1) and they were kept nowhere."""
    work = project(tmp_path, "## one\n- pip\n  FAKE: bash mkdir -p venv/src && git init -q "
                   "venv/src/pkg && echo e > venv/src/pkg/e.txt && echo f > venv/f.txt\n"
                   "## two\n- other\n  FAKE: write other.txt o\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill",
                      *(["--parallel", "2"] if workplace == "lane" else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert task_files(work, 1) == ["venv/f.txt", "venv/src/pkg/e.txt"]
    assert task_files(work, 2) == ["other.txt"]
    assert (work / "venv/src/pkg/e.txt").read_text() == "e\n"


@pytest.mark.parametrize("staged", [False, True])
def test_a_failed_attempts_repository_is_kept_when_the_lane_goes(
        tmp_path: Path, fake_claude: FakeClaude, staged: bool) -> None:
    """The lane's removal ran `git add -A` over it: "does not have a commit checked out",
    exit 1, and the lane's files were kept nowhere; one with a commit that the agent's own
    `git add -A` had staged was kept as a gitlink, to a commit that went with the lane."""
    made = NO_COMMIT if not staged else \
        NO_COMMIT + " && git -C fresh/r add . && git -C fresh/r commit -qm r && git add -A"
    work = project(tmp_path, f"- pip\n  FAKE: bash {made}\n  FAKE: fail 9\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "1")
    assert done.returncode == 4, done.stdout + done.stderr
    kept = [line for line in done.stdout.splitlines() if "refs/agent-loop/kept-files/" in line]
    assert kept, done.stdout
    ref = "refs/agent-loop/kept-files/" + kept[0].split("refs/agent-loop/kept-files/")[1][:-2]
    assert git(work, "show", f"{ref}:fresh/r/d.txt") == "d\n"
    assert not list(work.glob(".agent-loop/lanes/*"))


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_your_own_repositories_are_never_taken_for_the_agents(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """`git init tools` in a folder your repository tracks, and `mine/`, a repository of yours
    git lists as one folder: their `.git` stays where it is, nothing of yours in `mine/` is
    committed, and the agent's file in tools/ is committed as any other."""
    work = project(tmp_path, "- write in yours\n  FAKE: write tools/new.txt n\n"
                   "  FAKE: write mine/new.txt m\n  FAKE: bash git add -A && "
                   "git commit -qm mine\n  FAKE: write top.txt t\n")
    (work / "tools").mkdir()
    (work / "tools/keep.txt").write_text("k\n")
    git(work, "add", "tools")
    git(work, "commit", "-qm", "tools")
    git(work / "tools", "init", "-q")
    (work / "mine").mkdir()
    git(work / "mine", "init", "-q")
    (work / "mine/m.txt").write_text("m\n")
    git(work / "mine", "add", "m.txt")
    git(work / "mine", "commit", "-qm", "mine")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    # The agent's `git add -A` made `mine` a gitlink: your checkout's guard took its `.git`
    # for one the agent made and moved it into .agent-loop/submodule-git-folders/.
    assert (work / "tools/.git").is_dir() and (work / "mine/.git").is_dir()
    assert git(work / "mine", "log", "--format=%s") == "mine\n"
    assert not list(work.glob(".agent-loop/**/.git")), list(work.glob(".agent-loop/**"))
    assert "160000" not in git(work, "ls-tree", "-r", "HEAD")
    assert "the agent made inside yours" not in done.stdout
    assert "tools/new.txt" in task_files(work, 1)
    # A lane has no `mine/` of yours: what the agent wrote there is a new file as any other.
    assert [p for p in task_files(work, 1) if p.startswith("mine/")] == \
        ([] if workplace == "checkout" else ["mine/new.txt"])


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_an_agents_repository_it_committed_as_a_gitlink_lands_as_plain_files(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """The agent's own `git add -A && git commit` recorded app as a gitlink: in your checkout
    the task's commit dropped it and app/a.txt was in no commit; a lane landed the gitlink on
    your branch, an empty folder, the files gone with the lane."""
    work = project(tmp_path, "- make it\n  FAKE: bash git init -q app && echo a > app/a.txt && "
                   "git -C app add . && git -C app commit -qm app && git add -A && "
                   "git commit -qm app\n- next\n  FAKE: write two.txt 2\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert task_files(work, 1) == ["app/a.txt"]
    assert "160000" not in git(work, "ls-tree", "-r", "HEAD")
    assert (work / "app/a.txt").read_text() == "a\n"
    assert git(work, "status", "--porcelain", "--untracked-files=all", "--", "app") == ""
    assert any("app/: a git repository the agent made inside yours" in line
               for line in done.stdout.splitlines())


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_with_require_changes_an_agents_repository_is_a_change(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """git listed the repository as one folder, none of its files a change: the task failed
    five times, each attempt paid, and its advisor too."""
    work = project(tmp_path, f"- make it\n  FAKE: bash {TRACKED}\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill",
                      "--require-changes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(fake_claude.calls()) == 1
    assert task_files(work, 1) == ["src/newrepo/c.txt"]


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_a_repository_the_agents_failed_attempt_made_lands_with_its_retry(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """The roll-back of the failed attempt leaves the agent's `app/` (a nested repository is
    never deleted), and the retry's `git status` took it for one of yours: the task was done
    with no commit, app/a.txt in none."""
    work = project(tmp_path, "- make app\n  FAKE: bash mkdir -p app && git -C app init -q && "
                   "echo a > app/a.txt\n  FAKE: fail 1\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", workplace, "--no-distill",
                      "--max-attempts", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert task_files(work, 1) == ["app/a.txt"], done.stdout


def test_a_failed_tasks_repository_is_not_the_next_tasks(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Your checkout: a task that failed for good left its agent's `app/` (never deleted); the
    next task's commit does not take its files for its own."""
    work = project(tmp_path, "## one\n- make app\n  FAKE: bash mkdir -p app && git -C app init "
                   "-q && echo a > app/a.txt\n  FAKE: fail 9\n## two\n- next\n"
                   "  FAKE: write two.txt 2\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill",
                      "--max-attempts", "1")
    assert [t["status"] for t in state_of(work)["tasks"]] == ["failed", "completed"], \
        done.stdout + done.stderr
    assert task_files(work, 2) == ["two.txt"], done.stdout


def test_your_file_the_agent_deleted_is_said_beside_its_repository(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """In your checkout, an agent that made a repository and deleted an uncommitted file of
    yours: the task's line said the file was gone and dropped the line that says where the
    repository's files went (one note replaced the other)."""
    work = project(tmp_path, f"- make it\n  FAKE: bash {NO_COMMIT} && rm scratch.txt\n"
                   "  FAKE: write top.txt t\n")
    (work / "scratch.txt").write_text("notes\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--allow-dirty",
                      "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    line = next((ln for ln in done.stdout.splitlines() if ln.strip().startswith("task 1:")), "")
    assert "scratch.txt (deleted)" in line and "uncommitted there is gone" in line, done.stdout
    assert "a git repository the agent made inside yours" in line, done.stdout
    assert task_files(work, 1) == ["fresh/r/d.txt", "top.txt"]
