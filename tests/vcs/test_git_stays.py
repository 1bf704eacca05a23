"""A git user's repository stays a git user's repository: with jj on PATH, `--vcs auto` runs a
git-only repository with git (its branch checked out, one commit per task authored by the user's
git identity) and says so first; `--vcs jj` gives jj git's identity when jj has none; a
repository an earlier version turned into jj gets one warning with the way back. Real git, real
jj, a test HOME holding the user's identity in its git config."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project
from tests.support.runner import agent_loop

PLAN = "- write a\n  FAKE: write a.txt A\n- write b\n  FAKE: write b.txt B\n"
NOTE = "vcs: git, though jj is installed: this is a git repository and stays one"


@pytest.fixture
def git_user(monkeypatch: pytest.MonkeyPatch, jj_bin: str) -> str:
    """A user known to git only (their ~/.gitconfig), with jj on PATH and no identity of its own."""
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "JJ_USER", "JJ_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    config = Path(os.environ["GIT_CONFIG_GLOBAL"])
    config.write_text(config.read_text()
                      + "[user]\n\tname = Gita User\n\temail = gita@example.com\n")
    return "Gita User <gita@example.com>"


def test_a_git_repository_is_run_with_git_on_its_branch(tmp_path: Path, git_user: str,
                                                        fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    dry = agent_loop(work, "--no-distill", "--dry-run")
    assert NOTE in dry.stdout, dry.stdout
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(NOTE), done.stdout
    assert "vcs: git" in done.stdout.splitlines()[1]
    assert not (work / ".jj").exists()
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    log = git(work, "log", "--format=%an <%ae>|%s", "main").splitlines()
    assert [line.split("|")[1] for line in log[:2]] == ["agent-loop: (ungrouped) / write b",
                                                        "agent-loop: (ungrouped) / write a"]
    assert {line.split("|")[0] for line in log} == {git_user}
    assert git(work, "status", "--porcelain") == ""
    assert "git revert" in done.stdout


def test_vcs_jj_takes_gits_identity_when_jj_has_none(tmp_path: Path, git_user: str,
                                                     fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, PLAN)
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 0, done.stdout + done.stderr
    authors = subprocess.run(
        ["jj", "log", "--no-graph", "-r", "::@ & description(glob:'agent-loop:*')", "-T",
         'author.name() ++ " <" ++ author.email() ++ ">\\n"'], cwd=work, capture_output=True,
        text=True, check=True).stdout.splitlines()
    assert authors == [git_user, git_user]


def test_a_repository_turned_into_jj_earlier_gets_the_way_back(tmp_path: Path, git_user: str,
                                                               fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    # What an earlier agent-loop left: colocated, a task's commit with no author, git detached.
    nobody = {**os.environ, "JJ_USER": "", "JJ_EMAIL": ""}
    for argv in (["git", "init", "--colocate"], ["new"], ["file", "track", "tasks.md"]):
        subprocess.run(["jj", *argv], cwd=work, env=nobody, check=True, capture_output=True)
    (work / "a.txt").write_text("A\n")
    subprocess.run(["jj", "commit", "-m", "agent-loop: (ungrouped) / write a"], cwd=work,
                   env=nobody, check=True, capture_output=True)
    head = git(work, "rev-parse", "HEAD").strip()
    before = git(work, "log", "--all", "--format=%H %an")
    dry = agent_loop(work, "--no-distill", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"git switch main && git merge --ff-only {head[:12]}" in dry.stdout, dry.stdout
    assert "jj bookmark set main -r @-" in dry.stdout
    assert git(work, "log", "--all", "--format=%H %an") == before  # nothing rewritten


def test_a_detached_head_is_said_before_the_run_commits_there(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- one\n  FAKE: write a.txt A\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    git(work, "checkout", "-q", "--detach")
    said = "git's HEAD is detached ("
    dry = agent_loop(work, "--dry-run", "--vcs", "auto")
    assert f"warning: {said}" in dry.stdout and "`git switch -c <name>`" in dry.stdout, dry.stdout
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    first = (done.stdout + done.stderr).splitlines()
    assert any(line.startswith(said) for line in first[:3]), first[:3]
    # No branch for a lane to land on: the agent works in the checkout this time, and says so.
    assert "git's HEAD is on no branch, so a working copy of its own" in done.stdout, done.stdout
    assert git(work, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
    # On a branch, not a word.
    git(work, "switch", "-q", "-c", "work")
    assert said not in agent_loop(work, "--dry-run").stdout


def test_a_folder_under_no_version_control_is_told_what_the_run_makes(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n")
    dry = agent_loop(work, "--dry-run", "--vcs", "git")
    assert "is no repository yet: the run makes one there (`git init`) before its first task" \
        in dry.stdout, dry.stdout
    assert sorted(p.name for p in work.iterdir()) == ["tasks.md"]
    rehearse = agent_loop(work, "--rehearse")
    assert rehearse.returncode == 1 and "as a real run would" in rehearse.stderr
    assert "does not make it for you" not in rehearse.stderr
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "is no repository yet: the run makes one there (`git init`)" in lines[0], lines[:3]
    assert (work / ".git").is_dir()


def test_a_repository_the_user_colocated_is_told_git_leaves_its_branch(
        tmp_path: Path, git_user: str, fake_claude: FakeClaude) -> None:
    # A git user runs a plan with git, then makes the repository colocated (`jj git init
    # --colocate`, git still on main) and starts another plan: auto runs it with jj, which
    # leaves git on a detached HEAD with main behind. The run says so before it starts.
    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    assert agent_loop(work, "--no-distill").returncode == 0
    subprocess.run(["jj", "git", "init", "--colocate"], cwd=work, check=True,
                   capture_output=True)
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    (work / "b.md").write_text("- write c\n  FAKE: write c.txt C\n")
    done = agent_loop(work, "--no-distill", plan="b.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vcs: jj" in done.stdout, done.stdout
    detached = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=work)
    assert detached.returncode != 0  # jj's way: git on no branch now
    head = done.stdout.split("\n[1/1]")[0]
    assert "detached HEAD" in head and "your branch main stays where it is" in head, head
    assert "jj bookmark set main -r @-" in head
    # Once git is detached (jj's way), the next run has nothing new to say about it.
    (work / "c.md").write_text("- write d\n  FAKE: write d.txt D\n")
    again = agent_loop(work, "--no-distill", plan="c.md")
    assert again.returncode == 0 and "your branch main stays" not in again.stdout, again.stdout


def test_a_jj_repository_is_told_nothing_of_gits_branch(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    # `jj git init` makes a colocated repository whose git HEAD names an unborn main: a jj
    # user's, with no branch of theirs to leave behind.
    work = tmp_path / "project"
    work.mkdir()
    subprocess.run(["jj", "git", "init"], cwd=work, check=True, capture_output=True)
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt A\n")
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vcs: jj" in done.stdout and "stays where it is" not in done.stdout, done.stdout


def test_a_branch_of_yours_named_as_the_lane_is_kept_and_said(tmp_path: Path,
                                                              fake_claude: FakeClaude) -> None:
    # Your branch agent-loop/<the plan's lane> with a commit of yours on it: the run starts its
    # lane afresh from your branch's tip, and says in one line where your commit is kept and
    # how to take it back (it was moved to refs/agent-loop/previous/ without a word).
    from agentloop.vcs import lanes

    work = git_project(tmp_path, "- one\n  FAKE: write one.txt one\n")
    name = lanes.serial_lane(lanes.plan_key("tasks.md"))
    git(work, "checkout", "-q", "-b", f"agent-loop/{name}")
    (work / "mine.txt").write_text("mine\n")
    git(work, "add", "mine.txt")
    git(work, "commit", "-qm", "my work")
    mine = git(work, "rev-parse", "HEAD").strip()
    git(work, "checkout", "-q", "-")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    kept = f"refs/agent-loop/previous/{name}"
    assert git(work, "rev-parse", kept).strip() == mine
    said = [line for line in done.stdout.splitlines() if kept in line]
    assert len(said) == 1 and mine[:12] in said[0] and \
        f"git branch <name> {kept}" in said[0], done.stdout
    # A lane left by an earlier run whose tip is on your branch already is no news.
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert "refs/agent-loop/previous" not in again.stdout, again.stdout


def test_vcs_jj_takes_the_git_author_variables_when_nothing_else_names_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jj_bin: str,
        fake_claude: FakeClaude) -> None:
    # A container or a CI: GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL (the seal's) are the only
    # identity, in no git config and no jj config; git's commits have an author from them.
    for var in ("JJ_USER", "JJ_EMAIL"):
        monkeypatch.delenv(var)
    work = git_project(tmp_path, PLAN)
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "jj has no user identity" not in done.stdout, done.stdout
    authors = subprocess.run(
        ["jj", "log", "--no-graph", "-r", "::@ & description(glob:'agent-loop:*')", "-T",
         'author.name() ++ " <" ++ author.email() ++ ">\\n"'], cwd=work, capture_output=True,
        text=True, check=True).stdout.splitlines()
    assert authors == ["Test Author <author@example.com>"] * 2


# Names git takes for a branch that jj's revsets read otherwise: an operator (`&`, `x-`: the
# parents of x, `me@home`: a remote's bookmark), a quote for the shell.
ODD = ["fix&go", "it's", "x-", "me@home"]


def pasted_jj(work: Path, line: str | None) -> None:
    """The line's `jj bookmark set …` run as printed from the repository's subfolder src/."""
    command = re.search(r"`(jj bookmark set [^`]+)`", line or "")
    assert command is not None, line
    done = subprocess.run(["bash", "-c", command.group(1)], cwd=work / "src",
                          capture_output=True, text=True)
    assert done.returncode == 0, (command.group(1), done.stderr)


def bookmarked(work: Path, branch: str) -> list[str]:
    """The commit ids of `@-` and of bookmark `branch`, as jj reads them."""
    name = '"' + branch.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return [subprocess.run(["jj", "log", "--no-graph", "-r", revset, "-T", "commit_id"],
                           cwd=work, capture_output=True, text=True, check=True).stdout
            for revset in ("@-", name)]


@pytest.mark.parametrize("branch", ODD)
def test_the_bookmark_set_for_a_branch_jj_reads_as_an_operator_runs_as_printed(
        tmp_path: Path, git_user: str, branch: str) -> None:
    from agentloop.vcs.stays_git import attached_note, colocated_note

    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    git(work, "branch", "-m", "main", branch)
    (work / "src").mkdir()
    subprocess.run(["jj", "git", "init", "--colocate"], cwd=work, check=True,
                   capture_output=True)
    said = [attached_note(work), colocated_note(work, branch)]
    subprocess.run(["jj", "new"], cwd=work, check=True, capture_output=True)
    for line in said:
        pasted_jj(work, line)
        at, mark = bookmarked(work, branch)
        assert at and mark == at, (line, at, mark)


@pytest.mark.parametrize("branch", ODD)
def test_the_way_back_to_a_branch_named_for_the_shell_runs_as_printed(
        tmp_path: Path, git_user: str, branch: str) -> None:
    from agentloop.vcs.stays_git import converted_warning

    work = git_project(tmp_path, PLAN)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    git(work, "branch", "-m", "main", branch)
    nobody = {**os.environ, "JJ_USER": "", "JJ_EMAIL": ""}
    for argv in (["git", "init", "--colocate"], ["new"]):
        subprocess.run(["jj", *argv], cwd=work, env=nobody, check=True, capture_output=True)
    (work / "src").mkdir()
    (work / "src" / "a.txt").write_text("A\n")
    subprocess.run(["jj", "commit", "-m", "agent-loop: (ungrouped) / write a"], cwd=work,
                   env=nobody, check=True, capture_output=True)
    head = git(work, "rev-parse", "HEAD").strip()
    line = converted_warning(work)
    command = re.search(r"With git: `([^`]+)`", line or "")
    assert command is not None, line
    done = subprocess.run(["bash", "-c", command.group(1)], cwd=work / "src",
                          capture_output=True, text=True)
    assert done.returncode == 0, (command.group(1), done.stderr)
    assert git(work, "rev-parse", branch).strip() == head
    # and with jj, from the repository as it was
    git(work, "switch", "-q", "--detach", head)
    pasted_jj(work, line)
    at, mark = bookmarked(work, branch)
    assert at and mark == at, (at, mark)
