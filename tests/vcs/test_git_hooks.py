"""The repository's own git hooks: skipped by agent-loop's commits, which the run's first lines
say; with `git-hooks` on, `pre-commit` and `commit-msg` judge each task's change as checks, and
a failing hook goes back to the agent like a failing --check."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo
from tests.support.runner import agent_loop, plain_shell  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("plain_shell")

# Reads the change from the index git hands a hook (GIT_INDEX_FILE), as a real pre-commit does.
PRE_COMMIT = """#!/bin/sh
if git show :a.txt 2>/dev/null | grep -q broken; then
  echo "pre-commit: a.txt is broken"
  echo "FAKE: write a.txt fixed"
  exit 1
fi
"""
COMMIT_MSG = """#!/bin/sh
head -n 1 "$1" >> .git/commit-msg-seen
grep -q "write a" "$1"
"""


def hooked_repo(work: Path) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt broken\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    for name, text in (("pre-commit", PRE_COMMIT), ("commit-msg", COMMIT_MSG)):
        hook = work / ".git" / "hooks" / name
        hook.write_text(text)
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


# In a lane (the default) a hook runs in the lane's worktree, named by its full path; in your
# checkout (`--workplace checkout`), by its path in the repository.
HOOKS = {"checkout": ".git/hooks/", "lane": "/.git/hooks/"}


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_a_failing_pre_commit_hook_is_fixed_by_the_agent(work: Path, fake_claude: FakeClaude,
                                                         workplace: str) -> None:
    hooked_repo(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks",
                      "--workplace", workplace)
    assert done.returncode == 0, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines() if "check failed: " in line]
    assert len(failed) == 1 and failed[0].endswith(
        f"{HOOKS[workplace]}pre-commit (exit 1) — fix round 1/2"), done.stdout
    assert (work / "a.txt").read_text() == "fixed\n"
    assert [files for _, _, files in git_commits(work)] == [["a.txt"]]
    assert git(work, "show", "HEAD:a.txt") == "fixed\n"
    if workplace == "checkout":  # the hook writes beside the worktree's .git (a file in a lane)
        # commit-msg read the task's message, in each round.
        assert (work / ".git" / "commit-msg-seen").read_text().splitlines()[0].endswith(
            "write a")
    assert git(work, "status", "--porcelain") == ""
    assert not list((work / ".git").glob("agent-loop-hooks*"))  # its index is gone
    assert "will not run" not in done.stdout


def test_without_the_setting_the_run_says_the_hooks_are_skipped(work: Path,
                                                                 fake_claude: FakeClaude) -> None:
    hooked_repo(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("the repository's pre-commit and commit-msg hooks will not run on the tasks' "
            "commits (git-hooks = true, or --git-hooks, runs them as checks)") in done.stdout
    assert git(work, "show", "HEAD:a.txt") == "broken\n"  # as today: the hook never ran
    assert not (work / ".git" / "commit-msg-seen").exists()



@pytest.mark.parametrize("setting", [(), ("--git-hooks",)])
def test_a_hook_git_runs_on_a_commit_that_no_setting_runs_is_said(
        work: Path, fake_claude: FakeClaude, setting: tuple[str, ...]) -> None:
    # A post-commit hook alone (a notifier, a ctags update) was skipped without a word, with
    # --git-hooks too, which runs pre-commit and commit-msg only.
    init_repo(work, "git")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt A\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    seen = work.parent / "hooks-seen"
    for name in ("prepare-commit-msg", "post-commit"):
        hook = work / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {seen}\n")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    done = agent_loop(work, "--vcs", "git", "--no-distill", *setting)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("the repository's prepare-commit-msg and post-commit hooks will not run on the "
            "tasks' commits (agent-loop runs none of them; git-hooks runs only pre-commit and "
            "commit-msg, as checks)") in done.stdout
    assert not seen.exists()


def _husky(work: Path) -> Path:
    """husky's layout in a new repository with a one-task plan: core.hooksPath = .husky/_, a
    folder git ignores (`npm install` makes it), with a pre-commit hook that notes each run in
    the file returned."""
    init_repo(work, "git")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt A\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    hooks = work / ".husky" / "_"
    hooks.mkdir(parents=True)
    (hooks / ".gitignore").write_text("*\n")
    seen = work.parent / "hooks-seen"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\necho pre-commit >> {seen}\n")
    (hooks / "pre-commit").chmod(0o755)
    git(work, "config", "core.hooksPath", ".husky/_")
    return seen


def test_hooks_in_a_folder_git_ignores_are_brought_into_the_lane_or_refused(
        work: Path, fake_claude: FakeClaude) -> None:
    # husky's layout: core.hooksPath = .husky/_, a folder git ignores (`npm install` makes
    # it). A lane has no such folder: --git-hooks ran no hook there, without a word, and the
    # tasks were committed as the hook would have refused them.
    seen = _husky(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "`--lane-copy .husky/_`" in done.stderr, done.stderr
    assert fake_claude.task_runs() == [] and not seen.exists()
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks",
                      "--lane-copy", ".husky/_")
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen.read_text().split() == ["pre-commit", "pre-commit"]  # baseline, then task


def test_a_rehearsal_says_what_the_real_run_says_of_hooks_in_a_folder_git_ignores(
        work: Path, fake_claude: FakeClaude) -> None:
    # The rehearsal's working copy has no `.husky/_` either: it ran no hook, without a word,
    # where the real run stops before any agent naming the --lane-copy that brings it in.
    seen = _husky(work)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks", "--rehearse")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "`--lane-copy .husky/_`" in done.stderr and "a real run stops here too" in \
        done.stderr, done.stderr
    assert "task 1:" not in done.stdout and not seen.exists()  # no agent, not even its stand-in
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks", "--rehearse",
                      "--lane-copy", ".husky/_")
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen.read_text().split() == ["pre-commit", "pre-commit"]  # baseline, then task


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_a_commit_msg_hook_that_refuses_a_tasks_commit_keeps_its_work(
        work: Path, fake_claude: FakeClaude, workplace: str) -> None:
    # A refused message is not the agent's to fix (agent-loop writes it): fix rounds were paid
    # for it, then the task failed, its work dropped, and the next run paid the agent again.
    # Now the run stops as on any commit that fails, its work kept aside for the next run.
    hooked_repo(work)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    hook = work / ".git" / "hooks" / "commit-msg"
    # It refuses the task's change (a.txt), not the tree as it was: the baseline passes.
    hook.write_text("#!/bin/sh\ngit show :a.txt >/dev/null 2>&1 || exit 0\n"
                    "echo 'commit-msg: no ticket number'\nexit 1\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks", "--workplace",
                      workplace)
    assert done.returncode != 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert f"{HOOKS[workplace]}commit-msg" in said and "commit-msg: no ticket number" in said, \
        said
    assert "`agent-loop: <group> / <task>`" in said and "run without --git-hooks" in said, said
    assert "its work is kept aside" in said, said
    assert len(fake_claude.task_runs()) == 1  # no fix round paid for a message
    assert git_commits(work) == []
    hook.write_text("#!/bin/sh\nexit 0\n")  # the user lets the hook accept it
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks", "--workplace",
                      workplace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(fake_claude.task_runs()) == 1  # not paid again
    assert [files for _, _, files in git_commits(work)] == [["a.txt"]]


def test_a_commit_msg_hook_that_refuses_agent_loops_message_says_what_you_can_do(
        work: Path, fake_claude: FakeClaude) -> None:
    # commitlint's kind of hook: it refuses any message but `feat: ...`, agent-loop's too. The
    # baseline said "fix the tree or the command", though the message is not the user's.
    hooked_repo(work)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    (work / ".git" / "hooks" / "commit-msg").write_text(
        "#!/bin/sh\ngrep -qE '^(feat|fix): ' \"$1\" || { echo 'subject must be feat: or fix:'; "
        "exit 1; }\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks")
    assert done.returncode == 1, done.stdout + done.stderr
    assert fake_claude.calls() == []
    assert "fix the tree or the command" not in done.stderr, done.stderr
    assert "commit-msg hook (.git/hooks/commit-msg) refuses the message agent-loop commits " \
        "with" in done.stderr, done.stderr
    assert "`agent-loop: <group> / <task>`" in done.stderr and "trailers" in done.stderr
    assert "let the hook accept it, or run without --git-hooks" in done.stderr, done.stderr
    assert "subject must be feat: or fix:" in done.stderr, done.stderr


@pytest.mark.parametrize("hook", ["pre-commit", "commit-msg"])
def test_a_hook_that_fails_before_any_task_stops_the_run_before_any_agent_is_paid(
        work: Path, fake_claude: FakeClaude, hook: str) -> None:
    """A hook that refuses the tree as you left it (a linter broken on your machine, a hook
    that refuses every commit) fails every task whatever the agent does: it runs with the
    baseline checks, and the run stops there. It was held to each task's change only: 5
    attempts of 3 agent runs each, for each task, before the run gave up."""
    hooked_repo(work)
    for name in ("pre-commit", "commit-msg"):
        (work / ".git" / "hooks" / name).unlink()
    path = work / ".git" / "hooks" / hook
    path.write_text("#!/bin/sh\necho 'lint: command not found'\nexit 127\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--git-hooks")
    assert done.returncode == 1, done.stdout + done.stderr
    assert fake_claude.calls() == []
    assert f"hooks/{hook}" in done.stderr and "fails before any task ran" in done.stderr, \
        done.stderr
    assert "lint: command not found" in done.stderr, done.stderr
    assert git_commits(work) == [] and git(work, "status", "--porcelain") == ""


def test_with_jj_the_run_says_the_hooks_are_not_available(work: Path, jj_bin: str,
                                                          fake_claude: FakeClaude) -> None:
    hooked_repo(work)
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--git-hooks")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "git-hooks: not available with jj (its changes are no git commits)" in done.stdout
    assert "check:" not in done.stdout  # no hook ran


@pytest.mark.parametrize("hooks_path", ["", "custom-hooks"])
def test_a_colocated_jj_repository_says_its_git_hooks_will_not_run(
        work: Path, jj_bin: str, fake_claude: FakeClaude, hooks_path: str) -> None:
    # A plain git repository's run says its hooks are skipped; a colocated one (`jj git init
    # --colocate`) said nothing, and the user's hook silently never ran.
    init_repo(work, "colocated")
    (work / "tasks.md").write_text("- write a\n  FAKE: write a.txt A\n")
    folder = work / (hooks_path or ".git/hooks")
    folder.mkdir(parents=True, exist_ok=True)
    if hooks_path:
        git(work, "config", "core.hooksPath", hooks_path)
    seen = work.parent / "hooks-seen"
    (folder / "pre-commit").write_text(f"#!/bin/sh\necho pre-commit >> {seen}\n")
    (folder / "pre-commit").chmod(0o755)
    done = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("the repository's pre-commit hook will not run on the tasks' changes (jj runs no "
            "git hook, and git-hooks is not available with jj)") in done.stdout, done.stdout
    assert not seen.exists()


@pytest.mark.parametrize("hooks_path", ["", "custom-hooks"])
def test_the_hooks_found_with_the_repository_are_those_git_names(tmp_path: Path,
                                                                 hooks_path: str) -> None:
    # The `git rev-parse` that finds the repository asks where its hooks are too; the run's
    # first look at them takes that answer, which must be git's own (core.hooksPath honoured).
    from agentloop.vcs import githooks
    from agentloop.vcs.git.repo import GitRepo
    from agentloop.vcs.git.run import Git
    from tests.support.repos import make_repo

    work = make_repo(tmp_path / "work")
    folder = work / (hooks_path or ".git/hooks")
    folder.mkdir(parents=True, exist_ok=True)
    if hooks_path:
        git(work, "config", "core.hooksPath", hooks_path)
    for name in githooks.HOOKS:
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    asked = githooks.hooks(work)                       # asked on its own
    assert GitRepo(Git(work)).locate()
    assert githooks.hooks(work) == asked               # taken from the locating rev-parse
    assert [h.path for h in asked] == [folder / name for name in githooks.HOOKS]


# Every hook git runs outside a commit's own, and post-commit: each notes its name when run.
EVERY_HOOK = ("pre-commit", "commit-msg", "post-commit", "post-checkout", "post-merge",
              "post-rewrite", "reference-transaction", "post-index-change", "pre-auto-gc")


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_agent_loops_own_git_runs_none_of_your_hooks(work: Path, fake_claude: FakeClaude,
                                                     workplace: str) -> None:
    # Its commits, ref updates, the lane's `worktree add` and the landing's `merge --ff-only`
    # in your checkout: none runs a hook of yours (reference-transaction ran 9 times,
    # post-index-change 10, post-checkout once for two tasks before). --git-hooks still runs
    # pre-commit and commit-msg, as checks.
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    seen = work.parent / "hooks-seen"
    for name in EVERY_HOOK:
        hook = work / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {seen}\n")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(git_commits(work)) == 2
    assert not seen.exists(), seen.read_text()
    with (work / "tasks.md").open("a") as plan:
        plan.write("- three\n  FAKE: write c.txt C\n")
    git(work, "commit", "-qam", "plan 2")
    seen.unlink(missing_ok=True)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace,
                      "--git-hooks")
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen.exists(), done.stdout   # on the baseline, then on the task's change
    assert set(seen.read_text().split()) == {"commit-msg", "pre-commit"}


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_a_hook_and_an_fsmonitor_an_agent_plants_run_nowhere_and_are_said_and_kept(
        work: Path, fake_claude: FakeClaude, workplace: str) -> None:
    # Without --sandbox the lane's agent writes a reference-transaction hook into your
    # repository's hooks folder and sets core.fsmonitor in its config (both shared with its
    # lane). agent-loop's own git runs neither (HOOK-RAN 5 times and FSMON 25 times before),
    # and the step says, once, what changed and the way back; the task's record keeps it.
    init_repo(work, "git")
    ran = work.parent / "ran"
    plant = (f"d=$(git rev-parse --git-common-dir); "
             f"printf '#!/bin/sh\\necho HOOK >> {ran}\\n' > $d/hooks/reference-transaction; "
             f"chmod +x $d/hooks/reference-transaction; "
             f"git config --file $d/config core.fsmonitor 'echo FSMON >> {ran}; true'")
    (work / "tasks.md").write_text(f"- one\n  FAKE: bash {plant}\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: write b.txt B\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(git_commits(work)) == 2
    assert not ran.exists(), ran.read_text()
    said = [line for line in done.stdout.splitlines() if line.startswith("  ")
            and "core.fsmonitor set to" in line]
    assert len(said) == 1, done.stdout
    line = said[0]
    assert f"{work}/.git/config" in line and f"{work}/.git/hooks" in line, line
    assert "reference-transaction added" in line, line
    unset = f"git -C {work} config --unset-all core.fsmonitor"
    remove = f"rm {work}/.git/hooks/reference-transaction"
    assert f"`{unset}`" in line and f"`{remove}`" in line, line
    assert sum("core.fsmonitor" in x for x in done.stdout.splitlines()) == 2  # and look at:
    status = agent_loop(work, "--status")
    assert "core.fsmonitor set to" in status.stdout, status.stdout
    # The commands do what they say.
    git(work, *unset.split()[3:])
    (work / ".git" / "hooks" / "reference-transaction").unlink()
    assert "fsmonitor" not in (work / ".git" / "config").read_text()
