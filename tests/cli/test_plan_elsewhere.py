"""A plan that belongs to another repository than the one agent-loop runs in: refused before
anything is read or paid, with the way through; a plan outside any repository still runs."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, make_repo
from tests.support.runner import agent_loop

PLAN = "# O\n- [ ] o1\n  FAKE: write o1.txt O\n"


def refused(done: subprocess.CompletedProcess[str], here: Path, other: Path,
            fake_claude: FakeClaude) -> None:
    """The run in `here` of a plan of the repository `other`: refused in one line that says
    where to run it, before anything was written or paid."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, (done.stdout, done.stderr)
    assert f"plan.md is in another repository ({other})" in lines[0]
    assert f"cd {other} && agent-loop plan.md" in lines[0]
    assert fake_claude.task_runs() == []
    assert not (here / ".agent-loop").exists() and not (other / ".agent-loop").exists()
    assert not (here / "o1.txt").exists()


def ran_here(done: subprocess.CompletedProcess[str], here: Path, fake_claude: FakeClaude) -> None:
    """The plan's one task ran in `here`, once."""
    assert done.returncode == 0, done.stderr
    assert (here / "o1.txt").read_text().strip() == "O"
    assert len(fake_claude.task_runs()) == 1


@pytest.mark.parametrize("args", [(), ("--dry-run",), ("--status",)])
def test_a_plan_inside_another_repository_is_refused_with_the_way_through(
        tmp_path: Path, fake_claude: FakeClaude, args: tuple[str, ...]) -> None:
    here = make_repo(tmp_path / "here")
    other = make_repo(tmp_path / "other", files={"README.md": "other\n", "plan.md": PLAN})
    done = agent_loop(here, *args, plan=str(other / "plan.md"), timeout=60)
    refused(done, here, other, fake_claude)


def test_a_plan_outside_any_repository_still_runs_in_this_one(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    here = make_repo(tmp_path / "here")
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "plan.md").write_text(PLAN)
    done = agent_loop(here, plan=str(tmp_path / "plans" / "plan.md"), timeout=120)
    ran_here(done, here, fake_claude)


def test_a_plan_in_a_repository_around_this_one_still_runs_here(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # A home folder kept in git (dotfiles) around the project, plans kept beside the project:
    # they ran here before; refusing them said to run the agent in the outer repository.
    outer = make_repo(tmp_path / "home")
    here = make_repo(outer / "proj")
    (outer / "plans").mkdir()
    (outer / "plans" / "plan.md").write_text(PLAN)
    done = agent_loop(here, plan=str(outer / "plans" / "plan.md"), timeout=120)
    ran_here(done, here, fake_claude)


def _submodule(here: Path, other: Path) -> Path:
    """`other` added to `here` as the submodule `sub` (a file:// URL, which git refuses by
    default since 2.38.1), committed."""
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(other), "sub"], cwd=here, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=T", "commit", "-qm", "sub"],
                   cwd=here, check=True)
    return here / "sub"


@pytest.mark.parametrize("where", ["submodule", "nested"])
@pytest.mark.parametrize("args", [(), ("--dry-run",), ("--status",)])
def test_a_plan_inside_a_repository_within_this_one_is_refused_too(
        tmp_path: Path, fake_claude: FakeClaude, where: str, args: tuple[str, ...]) -> None:
    # A submodule, or a repository of its own not tracked here: the plan's tasks belong to it,
    # and a run here would commit them to the outer repository's root.
    here = make_repo(tmp_path / "here")
    if where == "submodule":
        other = make_repo(tmp_path / "other", files={"README.md": "other\n", "plan.md": PLAN})
        inner = _submodule(here, other)
    else:
        inner = make_repo(here / "deep" / "nested", files={"README.md": "n\n", "plan.md": PLAN})
    plan = "sub/plan.md" if where == "submodule" else "deep/nested/plan.md"
    done = agent_loop(here, *args, plan=plan, timeout=60)
    refused(done, here, inner, fake_claude)


def test_a_plan_in_a_plain_subfolder_still_runs(tmp_path: Path, fake_claude: FakeClaude) -> None:
    (tmp_path / "here" / "docs" / "a").mkdir(parents=True)
    here = make_repo(tmp_path / "here", files={"README.md": "hi\n", ".gitignore": ".agent-loop/\n",
                                               "docs/a/plan.md": PLAN})
    done = agent_loop(here, plan="docs/a/plan.md", timeout=120)
    ran_here(done, here, fake_claude)


def test_the_commands_status_names_work_from_the_subfolder_you_stand_in(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`--status` from the plan's own subfolder said a reverted task is done once more by
    `agent-loop docs/plan.md --task 1 --again` (a run and `--dry-run` said so of a reworded
    one): the plan's path from the repository's root, which from docs/ names docs/docs/plan.md
    ("task file ... does not exist"), where every other path they print is said from where you
    stand."""
    here = make_repo(tmp_path / "here", files={"README.md": "hi\n"})
    (here / "docs").mkdir()
    (here / "docs" / "plan.md").write_text("# O\n- [ ] o1\n  FAKE: write o1.txt O\n"
                                           "- [ ] o2\n  FAKE: write o2.txt O\n")
    docs = here / "docs"
    assert agent_loop(docs, "--no-distill", plan="plan.md", timeout=120).returncode == 0
    one = git(here, "log", "--format=%H", "--grep", "o1").split()[0]
    git(here, "revert", "--no-edit", one)
    with (docs / "plan.md").open("a") as plan:
        plan.write("- [ ] o3\n  FAKE: write o3.txt O\n")
    (docs / "plan.md").write_text((docs / "plan.md").read_text().replace("o2\n", "o2 now\n", 1))
    ran = agent_loop(docs, "--no-distill", plan="plan.md", timeout=120)
    assert ran.returncode == 0, ran.stderr
    status = agent_loop(docs, "--status", plan="plan.md", timeout=60)
    dry = agent_loop(docs, "--dry-run", plan="plan.md", timeout=60)
    said = {"run": ran.stdout + ran.stderr, "status": status.stdout, "dry run": dry.stdout}
    named = {where: re.findall(r"`(agent-loop [^`]*--again)`", text)
             for where, text in said.items()}
    # The reworded task, said by each; the reverted one by --status.
    assert {where: len(found) for where, found in named.items()} == {
        "run": 1, "status": 2, "dry run": 1}, said
    for command in sum(named.values(), []):
        dry = agent_loop(docs, *shlex.split(command)[1:], "--dry-run", plan=None, timeout=60)
        assert dry.returncode == 0, (command, dry.stdout, dry.stderr)


def test_a_plan_in_a_subfolder_named_from_outside_any_repository_is_the_repositorys(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """From a folder in no repository, `agent-loop proj/docs/plan.md` took docs/ for the root:
    `--status` said "no run yet" of a plan done from inside, and a run paid for its done task
    again, its state in a second .agent-loop/ under docs/, the repository's agent-loop.toml
    unread. The root is the plan's repository's."""
    (tmp_path / "proj" / "docs").mkdir(parents=True)
    here = make_repo(tmp_path / "proj", files={"README.md": "hi\n", "docs/plan.md": PLAN})
    assert agent_loop(here, "--no-distill", plan="docs/plan.md", timeout=120).returncode == 0
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    status = agent_loop(outside, "--status", plan="../proj/docs/plan.md", timeout=60)
    assert "1 completed" in status.stdout, status.stdout
    again = agent_loop(outside, "--no-distill", plan="../proj/docs/plan.md", timeout=120)
    assert again.returncode == 0, again.stderr
    assert len(fake_claude.task_runs()) == 1
    assert not (here / "docs" / ".agent-loop").exists()
    (here / "agent-loop.toml").write_text('model = "sonnet"\n')
    shown = agent_loop(outside, "--show-settings", plan="../proj/docs/plan.md", timeout=60)
    assert 'model = "sonnet"' in shown.stdout, shown.stdout
