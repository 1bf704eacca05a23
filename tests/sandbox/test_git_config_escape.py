"""--sandbox against an agent that writes git configuration agent-loop's own git (outside the
sandbox) reads: a per-worktree config (`extensions.worktreeConfig`) and a submodule's config.
A filter set there runs, from agent-loop's next `git add` or `git status` (or yours), as the
user, outside the sandbox. Real
bubblewrap, real git, the fake claude's shell (put where the sandbox lets it be seen)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.files.shown import typed
from tests.sandbox.test_hooks import hooked, run
from tests.sandbox.test_sandbox_real import needs_bwrap
from tests.support.repos import git

# What the agent's shell does: a clean filter that writes the home folder when git runs it,
# named for every file by a .gitattributes of its working copy, and a file for git to clean.
FILTER = """filter.evil.clean 'sh -c "echo pwned > $HOME/pwned.txt; cat"'"""
EVIL = f"FAKE: bash git config --worktree {FILTER}; echo '* filter=evil' > .gitattributes\n"


def per_worktree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    git(work, "config", "extensions.worktreeConfig", "true")
    return work, env


@needs_bwrap
def test_a_lane_agent_cannot_set_a_filter_in_its_per_worktree_config(tmp_path: Path) -> None:
    work, env = per_worktree(tmp_path)
    (work / "tasks.md").write_text(f"## A\n- write a\n  FAKE: write a.txt a\n  {EVIL}\n"
                                   "## B\n- write b\n  FAKE: write b.txt b\n")
    done = run(work, env, "--sandbox", "--parallel", "2", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "evil" not in git(work, "config", "--list", "--show-origin")


@needs_bwrap
def test_an_agent_in_the_checkout_cannot_set_a_filter_in_its_per_worktree_config(
        tmp_path: Path) -> None:
    work, env = per_worktree(tmp_path)
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  {EVIL}")
    done = run(work, env, "--sandbox", "--workplace", "checkout", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "evil" not in git(work, "config", "--list", "--show-origin")


def with_submodule(work: Path, tmp_path: Path) -> None:
    """`work` with a submodule at deps/lib, its git folder under .git/modules."""
    sub = tmp_path / "lib"
    sub.mkdir()
    (sub / "lib.txt").write_text("lib\n")
    git(sub, "init", "-q")
    git(sub, "add", "lib.txt")
    git(sub, "commit", "-qm", "lib")
    git(work, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "deps/lib")
    git(work, "commit", "-qm", "submodule")


@needs_bwrap
def test_an_agent_in_the_checkout_cannot_set_a_filter_in_a_submodule_config(
        tmp_path: Path) -> None:
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    # The agent sets the filter in the submodule's config and has it clean a changed file:
    # the next `git add` or `git status` in the submodule, yours or agent-loop's, runs it.
    (work / "tasks.md").write_text(
        "- write a\n  FAKE: write a.txt a\n"
        f"  FAKE: bash cd deps/lib && git config {FILTER}; echo '* filter=evil' > .gitattributes;"
        " echo more >> lib.txt\n")
    done = run(work, env, "--sandbox", "--workplace", "checkout", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "evil" not in (work / ".git" / "modules" / "deps" / "lib" / "config").read_text()


# The protected files stay where they are; the agent moves the folder that holds them instead and
# puts a copy of its own in its place, with the filter in its config.
MOVED = {
    "git dir": "cp -r .git .git2 && git config -f .git2/config {filter} && mv .git .git-old && "
               "mv .git2 .git; rm -rf .git2",
    "submodule's git dir": "cp -r .git/modules .git/m2 && git config -f .git/m2/deps/lib/config "
                           "{filter} && mv .git/modules .git/m-old && mv .git/m2 .git/modules; "
                           "rm -rf .git/m2",
}


def in_checkout(tmp_path: Path, shell: str) -> tuple[Path, dict[str, str], str]:
    """A checkout with a submodule, run under --sandbox in place, whose one task's agent runs
    `shell`; the checkout, the run's environment and what the run said."""
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {shell}\n")
    done = run(work, env, "--sandbox", "--workplace", "checkout", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    return work, env, out


@needs_bwrap
@pytest.mark.parametrize("moved", sorted(MOVED))
def test_an_agent_in_the_checkout_cannot_move_the_git_folder_away_and_put_its_own(
        tmp_path: Path, moved: str) -> None:
    work, env, out = in_checkout(
        tmp_path, MOVED[moved].format(filter=FILTER) + "; echo '* filter=evil' > .gitattributes; "
        "echo '* filter=evil' > deps/lib/.gitattributes; echo more >> deps/lib/lib.txt")
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert not (work / ".git-old").exists() and not (work / ".git" / "m-old").exists()
    assert "evil" not in (work / ".git" / "config").read_text()
    assert "evil" not in (work / ".git" / "modules" / "deps" / "lib" / "config").read_text()


# In a lane: its .git file names another git folder, one the agent made in its own home: a
# clone sharing the repository's objects, with the filter in its config. (Its git folder's
# commondir, pointed there, is found damaged before any git runs in the lane.)
CLONE = ("c=$(git rev-parse --path-format=absolute --git-common-dir); "
         "b=$(git branch --show-current); e=~/.claude/ev; git clone -q --bare --shared $c $e && "
         "git -C $e config core.bare false && git -C $e symbolic-ref HEAD refs/heads/$b && "
         "git -C $e config {filter}")


@needs_bwrap
def test_a_lane_agent_cannot_point_its_lane_at_a_git_folder_of_its_own(tmp_path: Path) -> None:
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    shell = (f"{CLONE.format(filter=FILTER)} && echo \"gitdir: $e\" > .git; "
             "echo '* filter=evil' > .gitattributes")
    (work / "tasks.md").write_text(
        f"## A\n- write a\n  FAKE: write a.txt a\n  FAKE: bash {shell}\n\n"
        "## B\n- write b\n  FAKE: write b.txt b\n")
    done = run(work, env, "--sandbox", "--parallel", "2", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    # Its own git went on as in any lane: both tasks landed.
    assert done.returncode == 0, out
    assert git(work, "show", "HEAD:a.txt") == "a\n" and git(work, "show", "HEAD:b.txt") == "b\n"


# In your checkout: the agent points a submodule's .git at a git folder of its own (a copy of the
# submodule's, in its home, with the filter in its config), or makes a new submodule (a gitlink
# and a .gitmodules entry) whose git folder is its own; then changes a file for a filter to
# clean (the same bytes, a new time: git reads it through the filter to tell). No git of
# agent-loop's that descends into the submodule (its look, a status, `git add --all`) may run it.
OWN_SUB = {
    "pointed elsewhere": "e=~/.claude/ev; cp -r .git/modules/deps/lib $e && "
                         "git config -f $e/config core.worktree $PWD/deps/lib && "
                         "git config -f $e/config {filter} && echo \"gitdir: $e\" > deps/lib/.git; "
                         "echo '* filter=evil' > deps/lib/.gitattributes; "
                         "touch -d 2001-01-01 deps/lib/lib.txt",
    "new gitlink": "mkdir -p deps/ev && cd deps/ev && git init -q && echo x > x.txt && "
                   "git add x.txt && git -c user.name=a -c user.email=a@b commit -qm x && "
                   "git config {filter} && echo '* filter=evil' > .gitattributes && "
                   "touch -d 2001-01-01 x.txt && cd ../.. && git add deps/ev && "
                   "printf '[submodule \"ev\"]\\n\\tpath = deps/ev\\n\\turl = ./ev\\n' "
                   ">> .gitmodules",
    # `.git` a symlink to the agent's folder
    "symlinked": "e=~/.claude/ev; cp -r .git/modules/deps/lib $e && "
                 "git config -f $e/config core.worktree $PWD/deps/lib && "
                 "git config -f $e/config {filter} && rm deps/lib/.git && ln -s $e deps/lib/.git; "
                 "echo '* filter=evil' > deps/lib/.gitattributes; "
                 "touch -d 2001-01-01 deps/lib/lib.txt",
    # a relative gitfile to a folder of its own made beside git's, under .git/modules
    "beside git's": "e=.git/modules/ev; cp -r .git/modules/deps/lib $e && "
                    "git config -f $e/config core.worktree $PWD/deps/lib && "
                    "git config -f $e/config {filter} && "
                    "echo 'gitdir: ../../.git/modules/ev' > deps/lib/.git; "
                    "echo '* filter=evil' > deps/lib/.gitattributes; "
                    "touch -d 2001-01-01 deps/lib/lib.txt",
    # a submodule of the submodule, its git folder the agent's
    "nested": "cd deps/lib && mkdir in && cd in && git init -q && echo x > x.txt && "
              "git add x.txt && git -c user.name=a -c user.email=a@b commit -qm x && "
              "git config {filter} && echo '* filter=evil' > .gitattributes && "
              "touch -d 2001-01-01 x.txt && cd .. && git add in",
}


@needs_bwrap
@pytest.mark.parametrize("how", sorted(OWN_SUB))
def test_an_agent_in_the_checkout_cannot_give_a_submodule_a_git_folder_of_its_own(
        tmp_path: Path, how: str) -> None:
    work, env, out = in_checkout(tmp_path, OWN_SUB[how].format(filter=FILTER))
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "moved" in out and "submodule-git-folders" in out, out
    if how == "pointed elsewhere":  # the way back is said, and works
        assert f"`git -C {work} submodule update --init -- deps/lib` checks it out again" \
            in out, out
        assert git(work, "submodule", "status").startswith("-"), out
        git(work, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "--",
            "deps/lib")
        assert git(work, "submodule", "status").startswith(" "), out
    # In the run's events too.
    assert any("submodule-git-folders" in log.read_text()
               for log in (work / ".agent-loop").rglob("events.jsonl"))


@needs_bwrap
def test_a_git_folder_that_cannot_go_under_the_plans_folder_is_moved_beside_itself(
        tmp_path: Path) -> None:
    """The move under .agent-loop/ fails (here where it goes is a file; a full disk, a folder
    on another device that cannot be written alike): the `.git` is renamed in its own folder,
    where git looks for none, said in one line with why, and the run goes on as after any
    move; no traceback, and no git of agent-loop's runs the agent's filter."""
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    (work / ".agent-loop").mkdir()
    (work / ".agent-loop" / "submodule-git-folders").write_text("in the way\n")
    shell = OWN_SUB["pointed elsewhere"].format(filter=FILTER)
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {shell}\n")
    done = run(work, env, "--sandbox", "--workplace", "checkout", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "internal error" not in out and "Traceback" not in out, out
    assert "moved deps/lib/.git" in out and "deps/lib/.git-moved-by-agent-loop" in out, out
    assert "Not a directory" in out, out
    assert (work / "deps" / "lib" / ".git-moved-by-agent-loop").is_file()
    assert not (work / "deps" / "lib" / ".git").exists()
    assert done.returncode == 0, out


# In a lane, whose submodule folders are held empty: the agent checks the submodule out there
# from a git folder of its own (a copy of the repository's, the filter in its config) and names
# it in a `.git` file, which a sweep of the folder took for git's own checkout and left alone.
LANE_SUB = ("c=$(git rev-parse --path-format=absolute --git-common-dir); e=~/.claude/ev; "
            "cp -r $c/modules/deps/lib $e && git config -f $e/config core.worktree $PWD/deps/lib "
            "&& echo \"gitdir: $e\" > deps/lib/.git && git -C deps/lib checkout -qf HEAD && "
            "git config -f $e/config {filter}; echo '* filter=evil' > deps/lib/.gitattributes; "
            "touch -d 2001-01-01 deps/lib/lib.txt")


@needs_bwrap
def test_a_lane_agent_cannot_give_its_empty_submodule_folder_a_git_folder_of_its_own(
        tmp_path: Path) -> None:
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    shell = LANE_SUB.format(filter=FILTER)
    (work / "tasks.md").write_text(
        f"## A\n- write a\n  FAKE: write a.txt a\n  FAKE: bash {shell}\n\n"
        "## B\n- write b\n  FAKE: write b.txt b\n")
    done = run(work, env, "--sandbox", "--parallel", "2", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "deps/lib" in out and "submodule-files" in out, out


def unabsorbed(work: Path) -> None:
    """deps/lib's git folder moved into its own folder (as a clone made by hand holds it)."""
    import shutil

    lib = work / "deps" / "lib"
    (lib / ".git").unlink()
    shutil.move(str(work / ".git" / "modules" / "deps" / "lib"), str(lib / ".git"))
    git(work, "config", "-f", str(lib / ".git" / "config"), "--unset", "core.worktree")


@needs_bwrap
def test_an_agent_in_the_checkout_cannot_set_a_filter_in_an_unabsorbed_submodule(
        tmp_path: Path) -> None:
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    unabsorbed(work)
    (work / "tasks.md").write_text(
        "- write a\n  FAKE: write a.txt a\n"
        f"  FAKE: bash cd deps/lib && git config {FILTER}; echo '* filter=evil' > .gitattributes;"
        " touch -d 2001-01-01 lib.txt\n")
    done = run(work, env, "--sandbox", "--workplace", "checkout", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
    assert "moved deps/lib/.git" in out and "submodule-git-folders" in out, out
    # The way back is said, and works: its only git folder looked at and put back.
    kept = work / ".agent-loop" / "submodule-git-folders" / "deps" / "lib" / ".git"
    assert f"`mv {typed(kept)} {typed(work / 'deps' / 'lib' / '.git')}`" in out, out
    assert git(work, "submodule", "status").startswith("-"), out
    git(work, "config", "-f", str(kept / "config"), "--unset", "filter.evil.clean")
    kept.rename(work / "deps" / "lib" / ".git")
    assert git(work, "submodule", "status").startswith(" "), out


# A repository of its own the agent makes in your checkout and adds nowhere, for agent-loop's
# `git add --all` to take as a gitlink and a later `git status` to go into: measured closed
# before the move-aside too (the next task's status ran no filter); held here.
EMBEDDED = ("mkdir -p deps/ev && cd deps/ev && git init -q && echo x > x.txt && git add x.txt && "
            "git -c user.name=a -c user.email=a@b commit -qm x && git config {filter} && "
            "echo '* filter=evil' > .gitattributes && touch -d 2001-01-01 x.txt")


@needs_bwrap
def test_an_agent_in_the_checkout_cannot_leave_a_repository_of_its_own_to_be_added(
        tmp_path: Path) -> None:
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    with_submodule(work, tmp_path)
    (work / "tasks.md").write_text(
        f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {EMBEDDED.format(filter=FILTER)}\n"
        "- write b\n  FAKE: write b.txt b\n")
    done = run(work, env, "--sandbox", "--workplace", "checkout", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (Path(env["HOME"]) / "pwned.txt").exists(), out
