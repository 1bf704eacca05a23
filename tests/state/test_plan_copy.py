"""state/plan_copy.py: the plan's bytes as the last run read them, kept in its state folder;
a write of them cut short by a kill leaves nothing behind once the next run takes its lock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agentloop.state import plan_copy
from agentloop.state.store import Store


def test_the_copy_is_written_whole_over_the_last(tmp_path: Path) -> None:
    plan_copy.keep(tmp_path, b"- [ ] one\n")
    plan_copy.keep(tmp_path, b"- [ ] one\n- [ ] two\n")
    assert (tmp_path / plan_copy.NAME).read_bytes() == b"- [ ] one\n- [ ] two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [plan_copy.NAME]


def test_a_write_cut_short_by_a_kill_leaves_no_scratch_file_past_the_next_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path)
    store.make_dir()

    def killed(*_: object) -> None:
        raise SystemExit(137)  # the process ends here, its scratch file written

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(SystemExit):
        plan_copy.keep(store.dir, b"- [ ] one\n")
    monkeypatch.undo()
    assert [p for p in store.dir.iterdir() if p.name.endswith(".tmp")]
    with store.lock():
        pass
    assert not [p for p in store.dir.iterdir() if p.name.endswith(".tmp")]


def test_the_copy_has_a_plan_s_mode_so_the_cp_it_offers_puts_back_a_readable_plan(
        tmp_path: Path) -> None:
    """The line for a plan gone offers `cp <copy> <plan>`, and cp gives a new file its
    source's mode: a copy its owner's only would put back a plan no one else may read."""
    mask = os.umask(0o022)
    try:
        plan_copy.keep(tmp_path, b"- [ ] one\n")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / plan_copy.NAME).stat().st_mode) == 0o644
