"""What the controller counts for the whole run, whatever lane it hears it from: --max-failures
counts the tasks that failed in a row across every lane, and a run that stops leaves no task
`running`. Real git worktrees, agent-loop as a process, the fake claude."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, state_of
from tests.support.runner import agent_loop

# Waits until task N's record says `failed` (read as agent-loop reads it), so two lanes' failures
# come in a known order; gives up after a minute rather than hang a broken run.
WAIT = """\
import sys, time
from pathlib import Path
from agentloop.state.store import Store
root, index = Path(sys.argv[1]), int(sys.argv[2])
for _ in range(1200):
    state = Store(root).load()
    if state is not None and state.tasks[index - 1].status == "failed":
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
"""


def test_max_failures_counts_failures_in_every_lane(work: Path, tmp_path: Path,
                                                    fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    wait = tmp_path / "wait_failed.py"
    wait.write_text(WAIT)
    until = f"{sys.executable} {wait} {work}"
    # Alpha's first task fails; Beta's fails once Alpha's is recorded; Alpha's second waits for
    # Beta's failure and then succeeds. One failure per lane: counted per lane, no run stopped.
    (work / "tasks.md").write_text(
        "## Alpha\n- alpha one\n  FAKE: fail 9\n"
        f"- alpha two\n  FAKE: bash {until} 3\n  FAKE: write a2.txt A\n\n"
        f"## Beta\n- beta one\n  FAKE: bash {until} 1\n  FAKE: fail 9\n"
        "- beta two\n  FAKE: write b2.txt B\n")
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--max-failures", "2",
                      "--max-attempts", "1", "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "the agent seems stuck: 2 tasks failed in a row (tasks 1, 3)" in said
    # Alpha's second task was running when the count was reached: it finishes; Beta's second
    # never starts.
    statuses = [t["status"] for t in state_of(work)["tasks"]]
    assert statuses == ["failed", "completed", "failed", "pending"], said
    assert "running" not in said.splitlines()[-1]
