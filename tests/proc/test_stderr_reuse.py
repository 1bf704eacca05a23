"""The agent's stderr file is emptied and kept for the next run where agent-loop is the
subreaper (agentloop.proc.streamed._errors_file): each attempt's log shows its own run's stderr,
never the one before's, and loses none of its own."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, state_of
from tests.support.runner import agent_loop


def test_each_attempts_log_shows_its_own_stderr(work: Path, tmp_path: Path,
                                                fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    count = tmp_path / "runs"
    # Each run of the agent says on stderr which run it is; the first two fail.
    say = (f"FAKE: bash n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo $n > {count}; "
           "echo \"stderr of run $n\" >&2; if [ $n = 1 ]; then seq 1 40 | sed s/^/noise/ >&2; fi")
    (work / "tasks.md").write_text(f"- the task\n  {say}\n  FAKE: fail 2\n"
                                   "  FAKE: write done.txt done\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--max-attempts", "3",
                      "--backoff", "0")
    [task] = state_of(work)["tasks"]
    logs = [work / a["log"] for a in task["history"] if a.get("log")]
    assert len(logs) >= 2, done.stdout + done.stderr
    assert done.returncode == 0 and task["status"] == "completed", done.stdout + done.stderr
    tails = [log.read_text().split("-- stderr (last lines) --\n")[1] for log in logs]
    assert tails[0].startswith("stderr of run 1\nnoise1\n") and "noise40" in tails[0]
    assert tails[1:] == ["stderr of run 2\n", "stderr of run 3\n"]
