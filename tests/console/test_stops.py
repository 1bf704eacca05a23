"""The line a stop leaves: how to go on, with the plan named as it is now."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.console.stops import report
from agentloop.errors import RunStopped


def test_the_resume_line_names_a_plan_renamed_through_a_symlinked_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> None:
    """The plan given as `link/tasks.md`, `link` a symlink to the project: the run knows it by
    its resolved path, and the renamed plan was not put in the resume line."""
    real = tmp_path / "project"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (real / "plan.md").write_text("- one\n")
    monkeypatch.chdir(tmp_path)
    stop = RunStopped("no new task starts")
    stop.renamed = (str(real / "tasks.md"), str(real / "plan.md"))  # type: ignore[attr-defined]
    assert report(stop, ["link/tasks.md", "--parallel", "2"]) == stop.exit_code
    err = capsys.readouterr().err
    assert "Continue with: agent-loop link/plan.md --parallel 2" in err, err
    stop.renamed = (str(real / "tasks.md"), str(tmp_path / "plan.md"))  # type: ignore[attr-defined]
    report(stop, [str(tmp_path / "link" / "tasks.md")])
    err = capsys.readouterr().err
    assert f"Continue with: agent-loop {tmp_path / 'plan.md'}" in err, err
