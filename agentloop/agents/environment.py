"""The environment an agent starts with: the caller's, less the marks of an agent session around
us, plus what the settings add (`env`) and less what they remove (`env_exclude`).

agent-loop is often started from inside another agent's session (Claude Code, Codex). Such a
session marks the shell commands it runs with variables about itself: that they run inside it,
how it was started, the IDE port it talks to, its session and sandbox. Handed on, they would
tell the agent we start that it is a child of that session (Claude Code reads CLAUDECODE and
CLAUDE_CODE_ENTRYPOINT; CLAUDE_CODE_SSE_PORT would connect it to the caller's IDE). The names
were read from the CLIs themselves (tests/claude-cli 2.1.330, tests/codex-cli): the variables
their own shell commands are given. Credentials, configuration, PATH and HOME stay: those are
the user's, not the session's.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from agentloop import AGENT_REFLOG_ACTION

# Set by a Claude Code session for the commands it runs (measured: tests/agents/test_environment
# dumps them from the real CLI and holds this list to them), and CLAUDE_CODE_SSE_PORT by the IDE
# extensions that start it.
CLAUDE_SESSION = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT",
                  "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_CHILD_SESSION",
                  "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS", "CLAUDE_CODE_SESSION_ATTENDED",
                  "CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_MESSAGING_SOCKET",
                  "CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_CODE_EXECPATH", "CLAUDE_PID",
                  "CLAUDE_EFFORT")
# Set by a Codex session for the shell commands it runs (its sandbox, its thread).
CODEX_SESSION = ("CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID",
                 "CODEX_SESSION_ID", "CODEX_CI")
SESSION_VARIABLES = CLAUDE_SESSION + CODEX_SESSION


def child_env(environ: Mapping[str, str], add: Iterable[tuple[str, str]] = (),
              exclude: Iterable[str] = (), prefixes: Iterable[str] = ()) -> dict[str, str]:
    """`environ` without the session variables, `exclude` and names starting with one of
    `prefixes`, with the agent's mark on its git commands' reflog entries; then `add` on top
    (a variable the user adds on purpose is kept)."""
    gone = set(SESSION_VARIABLES) | set(exclude)
    starts = tuple(prefixes)
    env = {k: v for k, v in environ.items()
           if k not in gone and not (starts and k.startswith(starts))}
    env["GIT_REFLOG_ACTION"] = AGENT_REFLOG_ACTION
    env.update(add)
    return env
