"""Which options are settings: the long names of the options that shape a run.

A key is an option's long name (`check-timeout`); a file may spell it with underscores too
(`check_timeout`), and the environment as `AGENT_LOOP_CHECK_TIMEOUT`. The modes (--status,
--dry-run, --init, --rehearse, --reset, --again, --task, --json, --follow, --show-settings,
--stop-after-running) are never settings: they say what one call does, not how runs go. An
option that shapes a run becomes a key by one line below; its type, default and allowed values
are the option's own.
"""

from __future__ import annotations

from agentloop.options.record import EVENT_PREFIX

# In the order --show-settings lists them.
KEYS = (
    "agent",
    "agent-program",
    "model",
    "vcs",
    "allow-dirty",
    "check",
    "check-timeout",
    "check-rounds",
    "require-changes",
    "git-hooks",
    "review",
    "review-model",
    "max-review-rounds",
    "budget",
    "task-budget",
    "prices",
    "task-timeout",
    "max-attempts",
    "retry-model",
    "max-limit-waits",
    "max-failures",
    "backoff",
    "iterations",
    "parallel",
    "workplace",
    "lane-copy",
    "lane-link",
    "lane-setup",
    "lane-wait",
    "include-optional",
    "tick-boxes",
    "sleep",
    "distill",
    "distill-model",
    "env",
    "env-exclude",
    "sandbox",
    "sandbox-hide",
    "on-finish",
    "on-task",
    "hook-timeout",
    "notify",
    "serve-port",
    "serve-host",
)

ENV_PREFIX = "AGENT_LOOP_"
# Variables with the settings prefix that are no settings: the agent programs' own (kept as
# they were before settings existed), and the variables a hook is given (see run/hooks.py),
# which a hook that starts agent-loop again must not hand back to it as settings.
NOT_SETTINGS = ("AGENT_LOOP_CLAUDE", "AGENT_LOOP_CODEX")
HOOK_PREFIX = EVENT_PREFIX
# The per-plan tables: [plans."path/to/tasks.md"], the path relative to the repository root.
PLANS = "plans"


def param(key: str) -> str:
    """The option's parameter name: `check-timeout` -> `check_timeout`."""
    return key.replace("-", "_")


def env_name(key: str) -> str:
    """The environment variable of a key: `check-timeout` -> `AGENT_LOOP_CHECK_TIMEOUT`."""
    return ENV_PREFIX + param(key).upper()


def key_of(name: str) -> str:
    """A key as a file may spell it (`check_timeout`) in its one form (`check-timeout`)."""
    return name.replace("_", "-")
