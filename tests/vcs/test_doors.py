"""One door for git and one for jj (agentloop.vcs.git.run.Git, agentloop.vcs.jj.run.Jj): one
environment, one timeout policy, one error text. No module outside those two packages builds a
git or jj command line of its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentloop"
DOORS = (PACKAGE / "vcs" / "git", PACKAGE / "vcs" / "jj")
PROGRAMS = ("git", "jj")


def argv_built(tree: ast.AST) -> list[int]:
    """The lines where a list starts with the program's name (`["git", ...]`, `["jj", ...]`), or
    splices the jj door's own `JJ` prefix; a tuple of names (`kind in ("git", "jj")`) is no
    command line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value in PROGRAMS:
                found.append(node.lineno)
            if isinstance(first, ast.Starred) and isinstance(first.value, ast.Name) \
                    and first.value.id == "JJ":
                found.append(node.lineno)
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Tuple):
            first = node.args[0].elts[0] if node.args[0].elts else None
            if isinstance(first, ast.Constant) and first.value in PROGRAMS:
                found.append(node.lineno)
    return sorted(found)


def test_no_module_outside_the_doors_builds_a_git_or_jj_command() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path.is_relative_to(door) for door in DOORS):
            continue
        lines = argv_built(ast.parse(path.read_text(encoding="utf-8")))
        offenders += [f"{path.relative_to(PACKAGE.parent)}:{n}" for n in lines]
    assert not offenders, ("git and jj commands go through vcs.git.run.Git and vcs.jj.run.Jj, "
                           f"not proc: {offenders}")


def test_the_check_sees_the_ways_a_command_line_is_written() -> None:
    seen = argv_built(ast.parse(
        'proc.run(["git", "log"])\nargv = ["jj", "log"]\nproc.run([*JJ, "root"])\n'
        'proc.run(("git", "status"))\n'
        'if kind in ("git", "jj"):\n    pass\nGit(root).run("log")\nx = ["auto", "git"]\n'))
    assert seen == [1, 2, 3, 4]


def test_the_dashboards_diff_reads_through_the_doors(tmp_path: Path, jj_bin: str) -> None:
    from agentloop.dashboard.diffs import patch
    from tests.support.repos import git, jj

    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-qm", "agent-loop: add a")
    sha = git(tmp_path, "rev-parse", "HEAD").strip()
    assert "+one" in patch(tmp_path, "git", sha, sha)
    assert patch(tmp_path, "git", "0" * 40, "0" * 40).startswith("cannot show the change: ")
    other = tmp_path / "jj"
    other.mkdir()
    jj(other, "git", "init")
    (other / "b.txt").write_text("two\n")
    jj(other, "commit", "-m", "agent-loop: add b")
    change = jj(other, "log", "--no-graph", "-r", "@-", "-T", "change_id").strip()
    assert "+two" in patch(other, "jj", change, None)
