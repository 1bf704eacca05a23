"""What of the version-control side a fresh, plain run loads before its first agent starts:
only what that agent needs. The recovery of a run that died inside a task and the teardown
of a killed run's lanes load where their paths begin, after a look at the repository's files
that says whether there is anything to recover or sweep."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentloop.vcs.choose import sweep_workspaces
from agentloop.vcs.git.registration import nothing_to_sweep
from tests.support.audit import audited_run
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, make_repo


def loaded_before_the_first_agent(lines: list[str]) -> set[str]:
    """The modules an audited run imported before it started its first agent."""
    first_agent = next(n for n, line in enumerate(lines)
                       if line.startswith("process ") and "stream-json" in line)
    return {line.removeprefix("import ") for line in lines[:first_agent]
            if line.startswith("import ")}


# Paths a fresh run with no killed run before it does not take before its first agent.
NOT_BEFORE_THE_FIRST_AGENT = ("agentloop.vcs.git.recover",    # no open-attempt record
                              "agentloop.vcs.git.teardown",   # no lane to sweep
                              "agentloop.vcs.git.landing_record")   # no landing cut short


def test_a_fresh_run_loads_no_recovery_nor_teardown_before_its_first_agent(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    lines = audited_run(work, tmp_path)
    early = loaded_before_the_first_agent(lines)
    assert "agentloop.vcs.git.worktrees" in early, "no lane was made: is the run read right?"
    loaded = sorted(early & set(NOT_BEFORE_THE_FIRST_AGENT))
    assert not loaded, f"{loaded} load before the first agent: import them where their path begins"
    # The lane's removal, once its task landed, is where the teardown is loaded.
    assert "import agentloop.vcs.git.teardown" in lines and \
        "agentloop.vcs.git.teardown" not in early
    assert (work / "a.txt").read_text().strip() == "A"


# What only git runs take, and only once a landing was cut short or an agent has run (whether
# one was is read off git's files by agentloop.vcs.git.behind, which a colocated jj run loads).
NOT_IN_A_JJ_RUN_BEFORE_ITS_AGENT = ("agentloop.vcs.git.mainline",
                                    "agentloop.vcs.git.agent_in_checkout",
                                    "agentloop.vcs.git.moved_back",
                                    "agentloop.vcs.git.registration",
                                    "agentloop.vcs.git.reflog")


def test_a_jj_run_loads_no_git_landing_nor_git_lane_checks_before_its_agent(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    jj(work, "git", "init", "--colocate")   # a .git folder: preflight looks at git's files
    early = loaded_before_the_first_agent(audited_run(work, tmp_path, vcs="jj"))
    assert "agentloop.vcs.jj.backend" in early, "no jj run: is the run read right?"
    loaded = sorted(early & set(NOT_IN_A_JJ_RUN_BEFORE_ITS_AGENT))
    assert not loaded, f"a jj run loads {loaded} before its agent"
    assert (work / "a.txt").read_text().strip() == "A"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_sweep_is_skipped_only_when_the_files_say_there_is_nothing(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "project", "git", plan="- first\n")
    assert nothing_to_sweep(root, {"one"})
    # A killed run's lane branch: the sweep keeps what it holds and drops it.
    _git(root, "branch", "agent-loop/one")
    assert not nothing_to_sweep(root, {"one"})
    assert nothing_to_sweep(root, {"two"})
    assert sweep_workspaces("git", root, set(), {"one"}).notes == ()
    assert nothing_to_sweep(root, {"one"})   # swept: its branch (on the main line) dropped
    # A killed run's lane worktree, and a folder in the lanes' folder.
    lanes = root / ".agent-loop" / "lanes"
    _git(root, "worktree", "add", "-q", "-b", "agent-loop/two", str(lanes / "two"))
    assert not nothing_to_sweep(root, {"three"})
    sweep_workspaces("git", root, set(), {"two"})
    assert not (lanes / "two").exists()
    (lanes / "stray").mkdir()
    assert not nothing_to_sweep(root, {"three"})


def test_a_run_killed_inside_a_task_is_still_recovered(tmp_path: Path,
                                                       fake_claude: FakeClaude) -> None:
    # The record a killed run leaves is what loads the recovery: with it, the attempt's edits
    # are undone before the task runs again.
    from agentloop.vcs.git.backend import GitVcs

    root = make_repo(tmp_path / "project", "git", plan="- first\n")
    vcs = GitVcs(root, root / "tasks.md")
    vcs.prepare()
    vcs.begin("agent-loop: first")
    (root / "left.txt").write_text("half done\n")
    vcs.tree.close()   # killed here: no finish, no abandon
    again = GitVcs(root, root / "tasks.md")
    notes = again.prepare()
    assert not (root / "left.txt").exists(), notes
    assert any("rolled back" in note or "kept" in note for note in notes), notes
