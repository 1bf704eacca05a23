"""files/lock.py: one holder at a time, threads of one process as much as processes, and a
killed holder's lock free again at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from agentloop.files.lock import held, try_lock
from agentloop.vcs.lanes import bookkeeping


def test_two_threads_of_one_process_take_the_lanes_lock_in_turn(tmp_path: Path) -> None:
    second_in = threading.Event()
    seen_while_held: list[bool] = []

    def second() -> None:
        with bookkeeping(tmp_path):
            second_in.set()

    with bookkeeping(tmp_path):
        thread = threading.Thread(target=second)
        thread.start()
        # The one wait in this test: how long the second thread gets to (wrongly) come in.
        seen_while_held.append(second_in.wait(0.3))
    thread.join(10)
    assert seen_while_held == [False]
    assert second_in.is_set()


def test_a_held_lock_is_refused_to_a_try_and_free_once_released(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with held(path):
        assert try_lock(path) is None
    fd = try_lock(path)
    assert fd is not None


def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from agentloop.files.lock import held\nwith held(Path(sys.argv[1])):\n"
         "    print('held', flush=True); time.sleep(60)", str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert try_lock(path) is None
    finally:
        holder.kill()
        holder.wait()
    assert try_lock(path) is not None
