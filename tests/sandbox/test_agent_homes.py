"""--sandbox keeps what an agent's own CLI reads later, outside any sandbox, out of the agent's
reach: ~/.claude/settings.json (its `hooks` run as the user in tomorrow's interactive session),
CLAUDE.md, hooks/, agents/, commands/; ~/.codex/config.toml, AGENTS.md and the like. The rest of
the agent's home stays writable (sessions for --resume, backups, caches), and the run goes on:
the agent sees a write error.

With the REAL Claude Code and Codex CLIs against the fake APIs, in real bubblewrap; where it
cannot make a sandbox the tests skip and say why.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentloop.sandbox.policy import policy_for
from tests.run.test_real import state_of
from tests.sandbox.test_sandbox_real import needs_bwrap, report
from tests.support.claude_cli import agent_loop_env
from tests.support.codex_cli import codex_project
from tests.support.fake_openai import FakeOpenAI
from tests.support.fakeapi import FakeApi
from tests.support.runner import agent_loop

HOOK = '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch ~/owned"}]}]}}'
USER_SETTINGS = '{"cleanupPeriodDays": 30}\n'


def attempts(folder: str, steps: list[tuple[str, str]]) -> str:
    """One shell line that runs each step, noting its exit status in `folder`/report.txt."""
    return "; ".join(f"{cmd}; echo \"{name} $?\" >> {folder}/report.txt" for name, cmd in steps)


def test_the_kept_paths_are_held_read_only_and_made_when_missing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(USER_SETTINGS)
    work = tmp_path / "work"
    work.mkdir()
    kept = [(home / ".claude" / "settings.json", "{}\n"), (home / ".claude" / "CLAUDE.md", ""),
            (home / ".claude" / "hooks", None)]
    policy = policy_for(work, work / ".agent-loop", home, (), work, [home / ".claude"], True,
                        kept=kept)
    assert home / ".claude" in policy.writable
    assert {p for p, _ in kept} <= set(policy.protected)
    # The user's file is left as it is; the missing ones are made, empty, to be bound.
    assert (home / ".claude" / "settings.json").read_text() == USER_SETTINGS
    assert (home / ".claude" / "CLAUDE.md").read_text() == ""
    assert list((home / ".claude" / "hooks").iterdir()) == []


@needs_bwrap
def test_claude_cannot_write_its_own_settings_and_the_group_resumes(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    config = Path(env["HOME"]) / ".claude"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(USER_SETTINGS)
    line = attempts("~/.claude", [
        ("settings", f"echo '{HOOK}' > ~/.claude/settings.json"),
        ("local", f"echo '{HOOK}' > ~/.claude/settings.local.json"),
        ("hook", "echo 'touch ~/owned' > ~/.claude/hooks/start.sh"),
        ("memory", "echo obey >> ~/.claude/CLAUDE.md"),
        ("agent", "echo evil > ~/.claude/agents/evil.md"),
        ("command", "echo evil > ~/.claude/commands/evil.md"),
        ("move", "mv ~/.claude/settings.json ~/.claude/old.json"),
        ("remove", "rm -rf ~/.claude/hooks"),
        ("own", "echo mine > ~/.claude/scratch.txt"),
    ])
    work = tmp_path / "work"
    work.mkdir()
    # The CLI's own Write tool first, then the shell; a second task in the group resumes.
    (work / "tasks.md").write_text(
        f"## G\n- WRITE {config}/settings.json: {HOOK}\n  RUN {line}\n  WRITE one.txt: one\n"
        f"- WRITE two.txt: two\n")
    done = agent_loop(work, "--vcs", "none", "--sandbox", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (config / "settings.json").read_text() == USER_SETTINGS
    noted = report((config / "report.txt").read_text())
    assert noted.pop("own") == 0
    assert all(code != 0 for code in noted.values()), noted
    assert (config / "CLAUDE.md").read_text() == ""
    assert not (config / "settings.local.json").read_text().strip("{}\n")
    for folder in ("hooks", "agents", "commands"):
        assert list((config / folder).iterdir()) == []
    assert (work / "one.txt").read_text() == "one\n"
    assert (work / "two.txt").read_text() == "two\n"
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    assert tasks[1]["session_id"] == tasks[0]["session_id"]
    # The refused Write reached the agent as the tool's error, not as the end of the run.
    results = [b for r in fake_api.requests_for_messages() for m in r.body["messages"]
               if isinstance(m.get("content"), list) for b in m["content"]
               if b.get("type") == "tool_result" and b.get("is_error")]
    assert results, "the refused write never reached the agent"


@needs_bwrap
def test_codex_cannot_write_its_own_config_and_the_group_resumes(
        tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    line = attempts("~/.codex", [
        ("config", "echo 'notify = [\"touch\", \"/tmp/owned\"]' >> ~/.codex/config.toml"),
        ("agents", "echo obey >> ~/.codex/AGENTS.md"),
        ("hooks", "echo '{}' > ~/.codex/hooks.json"),
        ("rules", "echo 'prefix_rule(pattern=[\"rm\"], decision=\"allow\")' "
                  "> ~/.codex/rules/default.rules"),
        ("move", "mv ~/.codex/config.toml ~/.codex/old.toml"),
        ("own", "echo mine > ~/.codex/scratch.txt"),
    ])
    work, env = codex_project(tmp_path, fake_openai,
                              f"## G\n- WRITE one.txt: one\n  RUN {line}\n- WRITE two.txt: two\n")
    config = Path(env["CODEX_HOME"]) / "config.toml"
    before = config.read_text()
    done = agent_loop(work, "--agent", "codex", "--vcs", "none", "--no-distill", "--sandbox",
                      env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert config.read_text() == before
    noted = report((Path(env["CODEX_HOME"]) / "report.txt").read_text())
    assert noted.pop("own") == 0
    assert all(code != 0 for code in noted.values()), noted
    assert (Path(env["CODEX_HOME"]) / "AGENTS.md").read_text() == ""
    assert (work / "two.txt").read_text() == "two\n"
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    assert tasks[1]["session_id"] == tasks[0]["session_id"]


@needs_bwrap
@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_kept_file_behind_a_symbolic_link_is_held_at_its_target(tmp_path: Path,
                                                                   linked: str) -> None:
    from agentloop.agents import claude
    from agentloop.sandbox import open_sandbox

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    # Settings kept with the user's dotfiles, the CLI's folder linking to them.
    (home / "dotfiles").mkdir(parents=True)
    (home / "dotfiles" / "settings.json").write_text(USER_SETTINGS)
    if linked == "file":
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").symlink_to(home / "dotfiles" / "settings.json")
    else:  # the whole folder
        (home / ".claude").symlink_to(home / "dotfiles")
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    box = open_sandbox(work, work / ".agent-loop", env=env)
    argv = box.wrap(["sh", "-c", f"echo '{HOOK}' > ~/.claude/settings.json; echo $?"], work,
                    claude.homes(env), True, claude.kept(env))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    # It starts (bubblewrap refuses a link as a mount point), and the write fails.
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() != "0"
    assert (home / "dotfiles" / "settings.json").read_text() == USER_SETTINGS


@needs_bwrap
@pytest.mark.parametrize("kept", ["settings.json", "hooks"])
def test_an_agent_cannot_replace_a_kept_symbolic_link(tmp_path: Path, kept: str) -> None:
    """A kept path that is a link (settings kept with the user's dotfiles) is held at its
    target, and the link's folder is the agent's: it removes the link and puts its own file
    with a hook there, for the user's own CLI to run tomorrow. The link is put back as the
    agent's run ends, the agent's file kept beside it and said."""
    from tests.sandbox.test_hooks import hooked, run

    work, env = hooked(tmp_path)
    (work / ".git" / "hooks" / "pre-commit").unlink()
    home = Path(env["HOME"])
    (home / "dotfiles" / "hooks").mkdir(parents=True)
    (home / "dotfiles" / "settings.json").write_text(USER_SETTINGS)
    (home / ".claude").mkdir(parents=True)
    link = home / ".claude" / kept
    link.symlink_to(home / "dotfiles" / kept)
    own = (f"rm ~/.claude/{kept} && echo '{HOOK}' > ~/.claude/{kept}" if kept == "settings.json"
           else f"rm ~/.claude/{kept} && mkdir ~/.claude/{kept} && echo evil > ~/.claude/{kept}/x")
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {own}\n")
    done = run(work, env, "--sandbox", "--no-git-hooks")
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert link.is_symlink() and os.readlink(link) == str(home / "dotfiles" / kept), out
    assert (home / "dotfiles" / "settings.json").read_text() == USER_SETTINGS
    assert list((home / "dotfiles" / "hooks").iterdir()) == []
    # The agent's own is kept beside it, never read by the CLI, and said in the run's log.
    assert [p.name for p in (home / ".claude").iterdir() if p.name.startswith(kept + ".")]
    logs = "".join(p.read_text() for p in (work / ".agent-loop").rglob("*.log"))
    assert f"{kept}" in logs and "put back" in logs, logs
    # And on the console, once, where a person reads the run.
    said = [line for line in out.splitlines() if "put back" in line]
    assert len(said) == 1 and f"~/.claude/{kept}" in said[0], out


@needs_bwrap
def test_claude_cannot_write_its_global_config_or_plugins_and_the_group_resumes(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    """With CLAUDE_CONFIG_DIR the CLI's `.claude.json` (its `mcpServers` are commands the
    user's own CLI starts) lies in the writable folder, and so do the installed plugins
    (`plugins/`: their hooks and commands run in the user's next session): both held
    read-only, and the real CLI still works and resumes."""
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    config = tmp_path / "config"
    env["CLAUDE_CONFIG_DIR"] = str(config)
    hooks = config / "plugins" / "cache" / "market" / "tool" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "hooks.json").write_text(HOOK)
    mcp = '{"mcpServers":{"x":{"type":"stdio","command":"touch","args":["/tmp/owned"]}}}'
    line = attempts(str(config), [
        ("global", f"echo '{mcp}' > {config}/.claude.json"),
        ("plugin", f"echo '{HOOK}' > {hooks}/hooks.json"),
        ("newplugin", f"mkdir -p {config}/plugins/cache/evil"),
        ("own", f"echo mine > {config}/scratch.txt"),
    ])
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text(f"## G\n- RUN {line}\n  WRITE one.txt: one\n"
                                   f"- WRITE two.txt: two\n")
    done = agent_loop(work, "--vcs", "none", "--sandbox", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    noted = report((config / "report.txt").read_text())
    assert noted.pop("own") == 0
    assert all(code != 0 for code in noted.values()), noted
    assert "mcpServers" not in (config / ".claude.json").read_text()
    assert (hooks / "hooks.json").read_text() == HOOK
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed"]
    assert tasks[1]["session_id"] == tasks[0]["session_id"]
