"""agentloop.console.gone: a stream whose reader may go away, and the wait for a pipe's reader
that a Ctrl+C ends a moment after it reached agent-loop."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from agentloop.console.gone import Steady


def test_a_pipe_s_reader_that_goes_is_waited_for_and_later_writes_are_dropped() -> None:
    read, write = os.pipe()
    stream = Steady(open(write, "w"))
    threading.Timer(0.2, os.close, (read,)).start()
    began = time.monotonic()
    assert stream.reader_left(30.0)
    assert time.monotonic() - began < 10  # it went: no need to wait longer
    assert stream.gone
    stream.write("lost\n")
    stream.flush()  # nothing raised: the descriptor writes to /dev/null now


def test_a_reader_that_stays_is_waited_for_no_longer_than_asked() -> None:
    read, write = os.pipe()
    stream = Steady(open(write, "w"))
    assert not stream.reader_left(0.1)
    assert not stream.gone
    stream.write("kept\n")
    stream.flush()
    assert os.read(read, 100) == b"kept\n"
    os.close(read)


def test_a_file_is_no_pipe_and_is_not_waited_for(tmp_path: Path) -> None:
    with open(tmp_path / "out", "w") as file:
        stream = Steady(file)
        began = time.monotonic()
        assert not stream.reader_left(30.0)
        assert time.monotonic() - began < 10 and not stream.gone


def test_a_stream_whose_reader_went_writes_on_where_it_is_pointed(tmp_path: Path) -> None:
    # `2>&1 | tee log` stopped: stderr's reader went with stdout's; its lines go to the terminal.
    read, write = os.pipe()
    os.close(read)
    stream = Steady(open(write, "w"))
    assert stream.is_pipe() and stream.reader_left(0.0)
    with open(tmp_path / "terminal", "w") as terminal:
        stream.onto(terminal.fileno())
    assert not stream.gone
    stream.write("interrupted; state saved\n")
    stream.flush()
    assert (tmp_path / "terminal").read_text() == "interrupted; state saved\n"
