"""Which lost changes you took back yourself (agentloop.vcs.jj.takenback), on a real jj
repository: an abandon in your checkout rebases the changes above the one it drops, and jj lists
their old commits among those that operation hid; only the change it dropped is yours, not one an
agent abandons later in its lane."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.vcs.jj.run import Jj
from agentloop.vcs.jj.takenback import taken_back
from agentloop.vcs.lanes import JJ_PREFIX
from tests.support.repos import jj, make_repo

pytestmark = pytest.mark.usefixtures("jj_bin")


def test_a_change_an_agent_abandons_after_yours_is_not_yours(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", "jj")
    for name in ("t1", "t2", "t3"):
        (root / f"{name}.txt").write_text(name)
        jj(root, "commit", "-m", name)
    t1, t2, t3 = (jj(root, "log", "--no-graph", "-r", f"description(exact:'{n}\n')", "-T",
                     "change_id").strip() for n in ("t1", "t2", "t3"))
    jj(root, "abandon", "-r", t1)  # you take task 1 back (t2 and t3 are rebased)
    lane = tmp_path / "lane"
    jj(root, "workspace", "add", "--name", f"{JJ_PREFIX}x", str(lane))
    jj(lane, "abandon", "-r", t3)  # an agent in its lane drops task 3
    assert taken_back(Jj(root), {t1, t3}) == {t1}
    assert taken_back(Jj(root), {t2}) == set()
