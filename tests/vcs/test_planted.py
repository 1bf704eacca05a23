"""Your repository's config and hooks folder, looked at before and after an agent's run
(agentloop.vcs.git.planted): what changed is named with the way back, a config written again
with the same settings is no change, and what one lane's step said another's does not repeat.
Real git repositories, git's own `git config` writing."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentloop.vcs.git import planted
from tests.support.repos import git, init_repo


def test_what_changed_is_named_with_the_way_back(work: Path) -> None:
    init_repo(work, "git")
    git(work, "config", "core.sshCommand", "ssh -i mine")
    hook = work / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\n")
    common = work / ".git"
    before = planted.look(common)
    # The same settings written again, by git: no change.
    git(work, "config", "core.sshCommand", "ssh -i mine")
    git(work, "config", "--unset", "core.sshCommand")
    git(work, "config", "core.sshCommand", "ssh -i mine")
    assert planted.changed(common, work, before) is None
    git(work, "config", "core.sshCommand", "ssh -i theirs")
    git(work, "config", "diff.external", "evil")
    hook.unlink()
    found = planted.changed(common, work, before)
    assert found is not None and not found.stops
    assert "core.sshcommand set to `ssh -i theirs`" in found.line, found.line
    assert "diff.external set to `evil`" in found.line and "pre-push deleted" in found.line
    # The way back: each command run as the line gives it puts the settings back.
    for command in found.commands:
        args = command.split(" config ", 1)[1]
        if args.startswith("--unset-all "):
            git(work, "config", "--unset-all", args.split()[1])
        else:
            key, value = args.removeprefix("--add ").split(" ", 1)
            git(work, "config", "--add", key, value.strip("'"))
    assert git(work, "config", "--get-all", "core.sshCommand") == "ssh -i mine\n"
    assert "external" not in (common / "config").read_text()


def test_a_change_one_lane_said_is_not_said_again_by_another(work: Path) -> None:
    init_repo(work, "git")
    common = work / ".git"
    first, second = planted.look(common), planted.look(common)
    (common / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    said = planted.changed(common, work, first)
    assert said is not None and "post-checkout added" in said.line
    assert said.commands == (f"rm {common}/hooks/post-checkout",)
    assert planted.changed(common, work, second) is None


def test_the_way_back_runs_as_pasted_where_the_checkouts_path_holds_a_newline(
        tmp_path: Path) -> None:
    work = tmp_path / "my\nrepo"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "git")
    git(work, "config", "core.sshCommand", "ssh -i it's mine")
    common = work / ".git"
    before = planted.look(common)
    git(work, "config", "core.sshCommand", "ssh -i theirs")
    (common / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    found = planted.changed(common, work, before)
    assert found is not None and len(found.commands) == 3, found
    for command in found.commands:  # each on one line, pasted in the folder above
        assert "\n" not in command, command
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                              text=True)
        assert done.returncode == 0, (command, done.stderr)
    assert git(work, "config", "--get-all", "core.sshCommand") == "ssh -i it's mine\n"
    assert not (common / "hooks" / "post-checkout").exists()
