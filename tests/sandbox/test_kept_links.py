"""--sandbox: a kept path of an agent's CLI home that is a symbolic link (settings kept with the
user's dotfiles) is held at its target, and put back after every confined run that replaced it
(agentloop.sandbox.links): a task's, the reviewer's and the helper calls' (the retry advisor,
the commit message), said once on the console. A link whose target is gone (dangling) is kept
as it was. Real bubblewrap, real links, the fake claude (or a program of the test's own, put
where the sandbox lets it be seen)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agentloop.agents import claude, codex
from agentloop.sandbox import open_sandbox
from tests.sandbox.test_agent_homes import HOOK, USER_SETTINGS
from tests.sandbox.test_hooks import hooked, run
from tests.sandbox.test_sandbox_real import needs_bwrap

# A helper call's program that does what the agent of a task may: its own settings file in
# place of the link; then answers as either CLI would (the answer does not matter here).
HELPER = """#!/bin/sh
rm "$1/settings.json" "$1/config.toml" 2>/dev/null
echo '{hook}' > "$1/settings.json"; echo '{hook}' > "$1/config.toml"
echo '{{"type": "result", "result": "{{}}", "total_cost_usd": 0}}'
"""


@needs_bwrap
@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_helper_call_that_replaced_a_kept_link_has_it_put_back_and_said(
        tmp_path: Path, agent: str) -> None:
    home = tmp_path / "home"
    folder = home / (".claude" if agent == "claude" else ".codex")
    name = "settings.json" if agent == "claude" else "config.toml"
    (home / "dotfiles").mkdir(parents=True)
    (home / "dotfiles" / name).write_text(USER_SETTINGS)
    folder.mkdir()
    (folder / name).symlink_to(home / "dotfiles" / name)
    program = home / "bin" / "helper"   # readable inside: the home folder is
    program.parent.mkdir()
    program.write_text(HELPER.format(hook=HOOK).replace('"$1', f'"{folder}'))
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    said: list[str] = []
    box = open_sandbox(work, work / ".agent-loop", env=env, tell=said.append)
    if agent == "claude":
        claude.ask(str(program), "haiku", "a commit message, please", work, env, 60, box)
    else:
        codex.CodexAgent(str(program), env, box).ask("a commit message, please", "m", work, 60)
    link = folder / name
    assert link.is_symlink() and os.readlink(link) == str(home / "dotfiles" / name)
    assert (home / "dotfiles" / name).read_text() == USER_SETTINGS
    assert (folder / f"{name}.by-agent").read_text().strip() == HOOK
    assert len(said) == 1 and f"~/{folder.name}/{name}" in said[0], said


def dangling(tmp_path: Path, target: str, shell: str) -> tuple[Path, Path, str]:
    """A run whose one task's agent runs `shell`, ~/.claude/settings.json a link to `target`
    (from the home folder), which does not exist: (the link, the home folder, what it said)."""
    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    home = Path(env["HOME"])
    (home / ".claude" / "mine").mkdir(parents=True)
    (home / "dotfiles").mkdir()
    link = home / ".claude" / "settings.json"
    link.symlink_to(home / target)
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {shell}\n")
    done = run(work, env, "--sandbox", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert done.returncode == 0, out
    return link, home, out


@needs_bwrap
@pytest.mark.parametrize("target", ["dotfiles/settings.json", ".claude/mine/settings.json"])
def test_a_dangling_kept_link_written_through_stays_as_it_was(tmp_path: Path,
                                                              target: str) -> None:
    """The agent writes its settings through the link: where the target would be made in the
    read-only home folder, the write fails; where it lies in the agent's own writable folder,
    the file it made there is moved aside after its run, said, and the link dangles again."""
    link, home, out = dangling(tmp_path, target,
                               f"echo '{HOOK}' > ~/.claude/settings.json")
    assert link.is_symlink() and os.readlink(link) == str(home / target), out
    assert not (home / target).exists(), out
    if target.startswith(".claude"):
        assert (home / (target + ".by-agent")).read_text().strip() == HOOK
        said = [line for line in out.splitlines() if "put back" in line]
        assert len(said) == 1 and "~/.claude/settings.json" in said[0], out


@needs_bwrap
def test_a_dangling_kept_link_the_agent_replaced_is_put_back_dangling(tmp_path: Path) -> None:
    link, home, out = dangling(tmp_path, "dotfiles/settings.json",
                               f"rm ~/.claude/settings.json; echo '{HOOK}' > "
                               "~/.claude/settings.json")
    assert link.is_symlink() and os.readlink(link) == str(home / "dotfiles" / "settings.json")
    assert not (home / "dotfiles" / "settings.json").exists()
    assert (home / ".claude" / "settings.json.by-agent").read_text().strip() == HOOK
    said = [line for line in out.splitlines() if "put back" in line]
    assert len(said) == 1 and "~/.claude/settings.json" in said[0], out
