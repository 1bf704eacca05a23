"""--parallel K: groups side by side, each in a git worktree of its own, every task landing on the
main line as one commit of its own, the user's checkout left as the user has it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FakeClaude
from tests.test_run_vcs import agent_loop, git, git_commits, init_repo, state_of


def plan(groups: int, tasks: int = 2, extra: str = "") -> str:
    out = []
    for g in range(1, groups + 1):
        out.append(f"## Group {g}")
        for t in range(1, tasks + 1):
            out.append(f"- task {g}.{t}\n  FAKE: write g{g}t{t}.txt {g}.{t}{extra}")
        out.append("")
    return "\n".join(out)


def test_four_groups_at_once_land_one_commit_per_task(work: Path,
                                                      fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(4, extra="\n  FAKE: sleep 1"))
    done = agent_loop(work, "--vcs", "git", "--parallel", "4", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    commits = git_commits(work)
    assert sorted(f for _, _, files in commits for f in files) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    assert all(len(files) == 1 for _, _, files in commits)
    # One commit per task, linear on main, named in the state as it is on main.
    assert git(work, "rev-list", "--merges", "main").strip() == ""
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert sorted(t["change_id"] for t in state["tasks"]) == sorted(c for c, _, _ in commits)
    # Within a group, order kept; the user's checkout follows the branch.
    subjects = [s for _, s, _ in commits]
    for g in range(1, 5):
        assert subjects.index(f"agent-loop: Group {g} / task {g}.1") < \
            subjects.index(f"agent-loop: Group {g} / task {g}.2")
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert sorted(p.name for p in work.glob("g*.txt")) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    # Each group's second task resumed its first's session, in the group's worktree.
    calls = [c for c in fake_claude.calls() if "--output-format" in c["argv"]]
    by_cwd: dict[str, list[list[str]]] = {}
    for c in calls:
        by_cwd.setdefault(c["cwd"], []).append(c["argv"])
    assert len(by_cwd) == 4 and all("/.agent-loop/lanes/" in cwd for cwd in by_cwd)
    assert all(sum("--resume" in argv for argv in runs) == 1 for runs in by_cwd.values())
    # They ran at once: every group's first task started before any group's second.
    # Nothing is left behind: no worktree, no lane branch, no landed record.
    assert git(work, "worktree", "list").count("\n") == 1
    assert "agent-loop/" not in git(work, "branch", "--list")
    assert git(work, "for-each-ref", "refs/agent-loop/landed/").strip() == ""
    lines = (work / ".agent-loop" / "events.jsonl").read_text().splitlines()
    lanes = {json.loads(line).get("lane") for line in lines}
    assert {f"Group {g}" for g in range(1, 5)} <= lanes
    assert "[Group 3] " in done.stdout


def test_the_users_staged_and_unstaged_work_is_never_swept_in(work: Path,
                                                             fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    git(work, "commit", "-qm", "notes")
    (work / "tasks.md").write_text(plan(2, 1))
    (work / "notes.txt").write_text("mine, staged\n")
    git(work, "add", "notes.txt")
    (work / "README.md").write_text("edited, not staged\n")
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    commits = git_commits(work)
    assert sorted(f for _, _, files in commits for f in files) == ["g1t1.txt", "g2t1.txt"]
    assert git(work, "status", "--porcelain", "--untracked-files=no").splitlines() == [
        " M README.md", "M  notes.txt"]
    assert (work / "README.md").read_text() == "edited, not staged\n"


CONFLICT_PLAN = """\
## Left
- left edit
  FAKE: write shared.txt left
  FAKE: sleep {left}

## Right
- right edit
  FAKE: write shared.txt right
  FAKE: sleep {right}
- right follow-up
  FAKE: write after.txt after
"""
CONFLICT_FIRST_LINE = "Your change for the task above does not fit the main line: other groups changed the same lines and their work landed first. Your working copy now holds the main line as it is, with your change applied on top; git marked each conflict (<<<<<<< / ======= / >>>>>>>) in:"


def conflict_project(work: Path, tmp_path: Path, monkeypatch, resolution: list[str]) -> None:
    init_repo(work, "git")
    (work / "shared.txt").write_text("base\n")
    git(work, "add", "shared.txt")
    git(work, "commit", "-qm", "shared")
    (work / "tasks.md").write_text(CONFLICT_PLAN.format(left=0, right=1))
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({CONFLICT_FIRST_LINE: resolution}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))


def test_a_conflict_is_resolved_by_the_groups_own_session(work: Path, tmp_path: Path,
                                                          fake_claude: FakeClaude,
                                                          monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: write shared.txt left right"])
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conflicts with the main line in shared.txt" in done.stdout
    assert (work / "shared.txt").read_text() == "left right\n"
    subjects = [s for _, s, _ in git_commits(work)]
    assert subjects == ["agent-loop: Left / left edit", "agent-loop: Right / right edit",
                        "agent-loop: Right / right follow-up"]
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed"] * 3
    # The resolution ran in the Right group's own session, which its follow-up resumed too.
    right = state["tasks"][1]
    resolved = [a for a in right["history"] if a.get("round")]
    assert resolved and resolved[0]["resumed"]
    assert state["tasks"][2]["session_id"] == right["session_id"]
    assert git(work, "show", "main:shared.txt") == "left right\n"


def test_an_unresolved_conflict_keeps_the_work_on_a_branch_and_exits_4(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 4, done.stdout + done.stderr
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed", "conflicted", "pending"]
    kept = state["tasks"][1]["change_id"]
    # Every line either agent wrote is reachable: left on main, right on the lane's branch.
    assert git(work, "show", "main:shared.txt") == "left\n"
    assert git(work, "show", "agent-loop/2-right:shared.txt") == "right\n"
    assert git(work, "rev-parse", "agent-loop/2-right").strip() == kept
    assert "git log -p main..agent-loop/2-right" in done.stdout
    status = agent_loop(work, "--status")
    assert "conflicted" in status.stdout
    # Resolved by hand in the lane's worktree, a plain re-run lands it and goes on.
    lane = work / ".agent-loop" / "lanes" / "2-right"
    (lane / "shared.txt").write_text("left and right\n")
    git(lane, "commit", "-qam", "by hand")
    git(lane, "rebase", "-q", "-X", "theirs", "main")
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert (work / "shared.txt").read_text() == "left and right\n"
    assert (work / "after.txt").exists()
