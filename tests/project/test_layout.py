"""The package's shape: no import cycle, no agent program known outside agents/, short modules."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentloop"
# The one place that turns option names into programs may name the agent table; nothing outside
# agents/ may import an agent's own module.
AGENT_MODULES = ("agentloop.agents.",)
MAX_LINES = 300
MAX_FUNCTION_LINES = 60


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every agentloop module `path` imports, at any depth, type-only imports included."""
    found = set()
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("agentloop")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if base.startswith("agentloop"):
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names}
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports(path) if m in modules and m != name}
            for name, path in modules.items()}


def test_no_import_cycles() -> None:
    edges = graph()
    # A package's __init__ importing nothing of its children, a child importing its package's
    # __init__ is no cycle; any other way back to a module is.
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert cycles == []


def test_only_agents_know_the_agent_programs() -> None:
    offenders = {name: sorted(m for m in deps if m.startswith(AGENT_MODULES))
                 for name, deps in graph().items() if not name.startswith("agentloop.agents")}
    assert {k: v for k, v in offenders.items() if v} == {}


def long_parts() -> list[str]:
    """Modules over MAX_LINES lines and functions over MAX_FUNCTION_LINES: each a sign to look
    at, not a reason to cut a concept in two."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        where = str(path.relative_to(PACKAGE))
        if (n := len(text.splitlines())) > MAX_LINES:
            found.append(f"{where}: {n} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{where}: {node.name}() is {length} lines")
    return found


def test_long_modules_and_functions_are_named_not_refused() -> None:
    # A warning in the test summary: a long module that holds one idea beats two halves that
    # share private names across the cut.
    for part in long_parts():
        warnings.warn(f"long: {part}", stacklevel=1)


def test_the_import_contracts_hold() -> None:
    # pyproject.toml's [tool.importlinter] contracts: the layers, and agents/ alone knowing
    # the agent programs. import-linter reads the code, imports nothing of it.
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--config", str(PACKAGE.parent / "pyproject.toml")],
                          cwd=PACKAGE.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_checks_can_fail() -> None:
    # The cycle finder finds a cycle when there is one.
    assert "agentloop.run.loop" in graph()["agentloop.run.start"]


# What starts a process, by module: called anywhere in agentloop/ outside agentloop/proc, it
# would skip the one door (its session, its group stops, its error text, the watchdog).
STARTERS = {"subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput",
                           "getstatusoutput"},
            "os": {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp",
                   *(f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
                   *(f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe"))},
            "pty": {"spawn", "fork"},
            "asyncio": {"create_subprocess_exec", "create_subprocess_shell"}}


def process_starts(path: Path, top: Path = PACKAGE.parent) -> list[str]:
    """`module.function` calls (and `from module import function`) of STARTERS in `path`."""
    found, name = [], path.relative_to(top)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.attr in STARTERS.get(node.value.id, ()):
            found.append(f"{name}:{node.lineno} "
                         f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in STARTERS:
            found += [f"{name}:{node.lineno} from {node.module} "
                      f"import {a.name}" for a in node.names if a.name in STARTERS[node.module]]
    return found


def test_every_process_starts_through_agentloop_proc() -> None:
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "proc" not in
               p.relative_to(PACKAGE).parts[:1]]
    assert [hit for p in outside for hit in process_starts(p)] == []


def test_the_door_rule_finds_a_process_started_elsewhere(tmp_path: Path) -> None:
    # An exception type of subprocess is no start; a call or an imported starter is.
    fake = tmp_path / "x.py"
    fake.write_text("import os, subprocess\nfrom subprocess import check_output, PIPE\n"
                    "subprocess.run(['true'])\nos.execvp('true', ['true'])\n"
                    "except_ = subprocess.TimeoutExpired\n")
    assert process_starts(fake, tmp_path) == [
        "x.py:2 from subprocess import check_output", "x.py:3 subprocess.run",
        "x.py:4 os.execvp"]
