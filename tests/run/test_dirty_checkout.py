"""A run in lanes (the default) starts with the user's uncommitted files in their checkout and
leaves them alone: edited, staged and untracked files stay as they were and in no task's change;
a task that changes one of them waits to land. Where the agent works in the checkout itself
(`--workplace checkout`, or where no lane can be), the run still refuses them, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, state_of
from tests.support.runner import agent_loop

PLAN = """\
## Docs
- write the guide
  FAKE: write guide.txt the guide

## Notes
- write the notes
  FAKE: write notes.txt the agent's notes
"""


def dirty_checkout(work: Path) -> None:
    """A git checkout as a user leaves it: an edited file, a staged one edited again, and an
    untracked file named as one a task creates."""
    init_repo(work, "git")
    (work / "staged.txt").write_text("committed\n")
    git(work, "add", "staged.txt")
    git(work, "commit", "-qm", "staged.txt")
    (work / "README.md").write_text("my edit\n")
    (work / "staged.txt").write_text("my staged edit\n")
    git(work, "add", "staged.txt")
    (work / "staged.txt").write_text("my staged edit, edited again\n")
    (work / "notes.txt").write_text("my own notes\n")
    (work / "tasks.md").write_text(PLAN)


def test_a_lane_run_leaves_your_uncommitted_files_alone(work: Path,
                                                        fake_claude: FakeClaude) -> None:
    dirty_checkout(work)
    before = git(work, "status", "--porcelain")
    staged = git(work, "diff", "--cached")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--lane-wait", "1s")
    # It started (no --allow-dirty), saying so in one line.
    said = [line for line in done.stdout.splitlines() if "uncommitted" in line]
    assert said[0] == ("your 3 uncommitted file(s) (e.g. README.md) are left alone: the agent "
                       "works from your last commit in a lane of its own, and a task that "
                       "changes one of them waits to land until you commit or stash it"), said
    assert "--allow-dirty" not in done.stdout + done.stderr
    # The guide landed, as its own commit; the notes task waits on your untracked notes.txt
    # (a plain `git stash` would leave it in the way: the line says `git stash -u`), then is
    # held: your file is never overwritten.
    assert done.returncode == 4, done.stdout + done.stderr
    assert git_commits(work)[-1][2] == ["guide.txt"]
    assert (work / "guide.txt").read_text() == "the guide\n"
    assert "waiting since" in done.stdout and "`git stash -u`" in done.stdout
    tasks = {t["group"]: t["status"] for t in state_of(work)["tasks"]}
    assert tasks == {"Docs": "completed", "Notes": "held"}
    assert (work / "notes.txt").read_text() == "my own notes\n"
    # Your edits as you left them: the staged one still staged, the rest untouched.
    assert (work / "README.md").read_text() == "my edit\n"
    assert (work / "staged.txt").read_text() == "my staged edit, edited again\n"
    assert git(work, "diff", "--cached") == staged
    assert git(work, "status", "--porcelain") == before
    # Move your file away and the held task lands, without its agent run again.
    (work / "notes.txt").rename(work / "my-notes.txt")
    calls = len(fake_claude.calls())
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.calls()) == calls
    assert (work / "notes.txt").read_text() == "the agent's notes\n"
    assert git_commits(work)[-1][2] == ["notes.txt"]
    assert (work / "README.md").read_text() == "my edit\n"
    assert git(work, "diff", "--cached") == staged


def test_your_edit_to_a_file_a_task_changes_waits_and_is_kept(work: Path,
                                                              fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "README.md").write_text("my edit, not committed\n")
    (work / "tasks.md").write_text("- reword the readme\n  FAKE: write README.md the task's\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--lane-wait", "1s")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "waiting since" in done.stdout
    assert "your uncommitted edits to README.md" in done.stdout
    assert "commit or stash them and it lands on the branch" in done.stdout
    assert (work / "README.md").read_text() == "my edit, not committed\n"
    assert git(work, "log", "--format=%s") == "initial\n"


def test_where_the_agent_works_in_your_checkout_the_run_refuses_and_says_why(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n")
    (work / "mine.txt").write_text("mine\n")
    # On no branch, a lane would have none to land on: the agent would work here.
    git(work, "checkout", "-q", "--detach")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stdout + done.stderr
    assert ("1 uncommitted file(s) in " in done.stderr and "(e.g. mine.txt): the agent works "
            "in this checkout this time (HEAD is on no branch" in done.stderr), done.stderr
    assert "--allow-dirty" in done.stderr
    git(work, "checkout", "-q", "-")
    # Asked for in the checkout: refused, as before lanes were the default.
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", "checkout")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(e.g. mine.txt): the agent works in this checkout, where" in done.stderr
    assert fake_claude.calls() == []
    assert not (work / "one.txt").exists()


def test_a_repository_with_no_commit_yet_refuses_uncommitted_files(
        work: Path, fake_claude: FakeClaude) -> None:
    git(work, "init", "-q")
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "this time (the repository has no commit yet for a lane to start from)" in \
        done.stderr
    assert fake_claude.calls() == []


def test_jj_a_lane_never_folds_your_working_copy_into_a_task(work: Path,
                                                             fake_claude: FakeClaude) -> None:
    init_repo(work, "jj")
    (work / "README.md").write_text("hello\n")
    jj(work, "commit", "-m", "initial")
    # Your edits in @ before the run: an edit, a new file, and an edit of a file a task writes.
    (work / "README.md").write_text("my edit\n")
    (work / "mine.txt").write_text("mine\n")
    (work / "notes.txt").write_text("my own notes\n")
    (work / "tasks.md").write_text(PLAN)
    mine = jj(work, "log", "--no-graph", "-r", "@", "-T", "change_id").strip()
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--lane-wait", "1s")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "waiting since" in done.stdout and "notes.txt" in done.stdout
    tasks = {t["group"]: t for t in state_of(work)["tasks"]}
    assert tasks["Docs"]["status"] == "completed" and tasks["Notes"]["status"] == "held"
    guide = tasks["Docs"]["change_id"]
    assert jj(work, "diff", "--name-only", "-r", guide).split() == ["guide.txt"]
    # Your change is still @, on top of the task's, holding your edits and nothing else.
    assert jj(work, "log", "--no-graph", "-r", "@", "-T", "change_id").strip() == mine
    assert sorted(jj(work, "diff", "--name-only", "-r", "@").split()) == \
        ["README.md", "mine.txt", "notes.txt", "tasks.md"]
    assert jj(work, "log", "--no-graph", "-r", "@-", "-T", "change_id").strip().startswith(
        guide[:8])
    assert (work / "notes.txt").read_text() == "my own notes\n"
    assert (work / "README.md").read_text() == "my edit\n"


# How a user sends a run's output to a file in the checkout: the shell's redirection, or a
# pipe into `tee`, which writes the file while agent-loop sees only a pipe.
INTO_RUN_LOG = {"redirect": 'exec "$@" > run.log 2>&1', "tee": '"$@" 2>&1 | tee run.log'}


@pytest.mark.parametrize("how", sorted(INTO_RUN_LOG))
def test_the_runs_own_output_file_in_your_checkout_is_no_ones_edit(work: Path,
                                                                   fake_claude: FakeClaude,
                                                                   how: str) -> None:
    """`agent-loop tasks.md > run.log 2>&1` (or `| tee run.log`) in the checkout: the log grows
    while each agent runs, which is the run writing its own output, not an agent writing
    outside its lane; no task says so (each said "run.log changed while this lane's agent ran",
    and with tee still did after the redirection was fixed)."""
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN)
    done = agent_loop(work, "--vcs", "git", "--no-distill",
                      prefix=("sh", "-c", INTO_RUN_LOG[how], "sh"))
    log = (work / "run.log").read_text()
    assert done.returncode == 0, log
    assert "2 completed" in log, log
    assert "changed while" not in log, log


@pytest.mark.parametrize(("how", "allow", "vcs"), [
    ("redirect", (), "git"), ("redirect", ("--allow-dirty",), "git"), ("redirect", (), "jj"),
    ("redirect", ("--allow-dirty",), "jj"), ("tee", ("--allow-dirty",), "git"),
    ("tee", (), "jj")])
def test_the_runs_own_output_file_is_in_no_task_where_the_agent_works_in_your_checkout(
        work: Path, fake_claude: FakeClaude, allow: tuple[str, ...], vcs: str, how: str,
        request: pytest.FixtureRequest) -> None:
    """`agent-loop tasks.md --workplace checkout > run.log 2>&1`: the shell makes run.log before
    the run starts and the run writes it while every task runs. It is not yours to refuse, nor
    the agent's to commit (every task's commit took it, with --allow-dirty too; jj snapshotted
    it into every task's change)."""
    if vcs == "jj":
        request.getfixturevalue("jj_bin")
    init_repo(work, vcs)
    (work / "tasks.md").write_text(PLAN)
    if vcs == "git":
        git(work, "add", "tasks.md")
        git(work, "commit", "-qm", "the plan")
    done = agent_loop(work, "--vcs", vcs, "--no-distill", "--workplace", "checkout", *allow,
                      prefix=("sh", "-c", INTO_RUN_LOG[how], "sh"))
    log = (work / "run.log").read_text()
    assert done.returncode == 0, log
    assert "2 completed" in log, log
    if vcs == "git":
        committed = [f for _, _, files in git_commits(work) for f in files]
    else:
        committed = [f for t in state_of(work)["tasks"] for f in jj(
            work, "diff", "--name-only", "-r", t["change_id"]).split()]
    assert "run.log" not in committed, committed
    assert "guide.txt" in committed and "notes.txt" in committed


def test_an_uncommitted_file_named_with_a_newline_is_said_on_one_line(
        work: Path, fake_claude: FakeClaude) -> None:
    # Your file "a\nb.txt": the line that says your files are left alone names it quoted,
    # whole, on that line; and the refusal where the agent works in your checkout too.
    init_repo(work, "git")
    (work / "a\nb.txt").write_text("mine\n")
    (work / "tasks.md").write_text("- write the guide\n  FAKE: write guide.txt the guide\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "uncommitted" in line]
    assert said == ['your 1 uncommitted file(s) (e.g. "a\\nb.txt") are left alone: the agent '
                    "works from your last commit in a lane of its own, and a task that "
                    "changes one of them waits to land until you commit or stash it"], said
    refused = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", "checkout")
    assert refused.returncode != 0
    lines = [line for line in refused.stderr.splitlines() if "uncommitted" in line]
    assert len(lines) == 1 and '(e.g. "a\\nb.txt")' in lines[0], refused.stderr
