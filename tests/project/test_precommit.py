"""The pre-commit hooks a contributor installs are the checks CI runs: the configuration is
read by pre-commit itself, every hook runs a tool of the project's environment, and ruff finds
nothing in the package, its tests and its scripts (mypy and the import contracts have tests of
their own)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_the_hooks_are_local_and_run_the_projects_own_tools() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert [r["repo"] for r in config["repos"]] == ["local"]
    assert set(hooks) == {"ruff", "mypy", "lint-imports"}
    for hook in hooks.values():
        program = hook["entry"].split()[0]
        assert program.startswith(".venv/bin/") and hook["language"] == "system"
        assert (BIN / Path(program).name).exists(), f"{program} is not in the test extra"
    done = subprocess.run([str(BIN / "pre-commit"), "validate-config"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


# What ruff checks, here and in the pre-commit hook: the package, its tests and its scripts.
LINTED = ("agentloop", "tests", "scripts")


def test_ruff_finds_nothing_in_the_package_its_tests_and_its_scripts() -> None:
    done = subprocess.run([str(BIN / "ruff"), "check", *LINTED], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_ruff_hook_lints_what_ci_lints() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    ruff = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "ruff")
    for folder in LINTED:
        assert re.search(ruff["files"], f"{folder}/a.py"), f"the ruff hook leaves out {folder}/"
