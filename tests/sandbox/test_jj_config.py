"""--sandbox against an agent that writes jj configuration agent-loop's own jj (outside the
sandbox) reads: a repository without `.jj/repo/config-id` takes a `.jj/repo/config.toml` as its
old per-repo config, moves it into your config folder and uses it, so a signing program set
there (`signing.behavior = "own"`) runs as you on agent-loop's next commit. Real bubblewrap,
real jj, the fake claude's shell."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.sandbox.test_sandbox_real import needs_bwrap
from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, jj

CONFIG = ("[signing]\\nbehavior = \\\"own\\\"\\nbackend = \\\"gpg\\\"\\n"
          "[signing.backends.gpg]\\nprogram = \\\"{program}\\\"\\n")


@needs_bwrap
def test_an_agent_cannot_give_the_repository_a_jj_config_of_its_own(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "jj")
    home = tmp_path / "home"
    fake = FakeClaude(home / "fake")
    evil = tmp_path / "evil.sh"   # the program the agent names: outside, as if its own
    evil.write_text(f"#!/bin/sh\necho pwned > {tmp_path}/pwned.txt\nexit 1\n")
    evil.chmod(evil.stat().st_mode | stat.S_IXUSR)
    # From its lane, whose `.jj/repo` file names the repository's folder.
    shell = ("r=.jj/repo; [ -f $r ] && r=$(cat $r) && case $r in /*) ;; *) r=.jj/$r;; esac; "
             f"rm -f $r/config-id; "
             f"printf \"{CONFIG.format(program=evil)}\" > $r/config.toml")
    (work / "tasks.md").write_text(f"- write a\n  FAKE: write a.txt a\n  FAKE: bash {shell}\n"
                                   "- write b\n  FAKE: write b.txt b\n")
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "AGENT_LOOP_CLAUDE": str(fake.bin),
           "FAKE_CLAUDE_STATE": str(home / ".claude" / "state")}
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "jj",
                           "--no-distill", "--sandbox"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    out = done.stdout + done.stderr
    assert "sandbox: on (bubblewrap)" in out
    assert not (tmp_path / "pwned.txt").exists(), out
    assert "Warning" not in out, out  # the config-id made for it: no word from jj
    assert "signing" not in jj(work, "config", "list", "--repo"), out
