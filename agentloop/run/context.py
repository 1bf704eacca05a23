"""What every step of a run is handed: one value, passed in, never a base class to inherit from."""

from __future__ import annotations

import threading
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from agentloop.agents import Agent
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.options.record import RunOptions
from agentloop.run.budget import Purse
from agentloop.run.clock import Clock, SystemClock
from agentloop.run.events import Emit
from agentloop.state.learnings import Learnings
from agentloop.state.project import Project
from agentloop.state.schema import State, TaskState
from agentloop.vcs.protocol import Vcs

if TYPE_CHECKING:
    from agentloop.sandbox import Sandbox

# The retry advisor and the commit-message writer, as the run calls them (agentloop.helpers).
Advisor = Callable[..., Any]
Distiller = Callable[..., Any]
# Which file a path named when it was read: its device and inode (os.stat's st_dev, st_ino).
FileId = tuple[int, int]


@dataclass
class Tally:
    """What a run (or one lane of it) counts as it goes: its usage-limit waits, the tasks it
    takes and those the user removed meanwhile. Tasks that failed in a row are the
    controller's to count (agentloop.run.controller), across every lane."""

    limit_waits: int = 0
    planned: tuple[int, ...] = ()     # the tasks this run takes, in order
    # Tasks the user removed from the plan while the run worked: not started, not counted.
    dropped: set[int] = field(default_factory=set)


class Shared:
    """What every lane of one run shares: the controller's thread (the only one that changes
    and saves records) and its door (`take`, where a lane hands a value over), one lock over
    the events and the state file, the wind-down flag (no new task starts), the usage-limit
    gate (no agent starts anywhere before a limit seen by one lane resets), and the purse (what
    the running attempts may still spend, against --budget); and what the lanes know together
    of the plan file, of the history, and of a landing that runs beside an agent."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._halt = threading.Event()
        # Set by the controller once a lane stopped on a breach of the main line every lane
        # lands on (Breach.everywhere): the lanes still at work land nothing more, their
        # finished work kept for the next run as a stop keeps it (agentloop.run.lane).
        self.main_breached = threading.Event()
        self.paused_until = 0.0     # clock.time() before which no agent run starts
        self.limit_waits = 0        # usage-limit waits of the whole run, across lanes
        self.purse = Purse(self.lock)
        # The controller's answer, asked by a lane before each task: may it start now?
        self.may_start: Callable[[TaskState], bool] | None = None
        # The controller's thread and door (agentloop.run.handover); None: no controller.
        self.owner: threading.Thread | None = None
        self.take: Callable[[Run, TaskState, Any], Any] | None = None
        # A run in lanes: the main line its tasks land on (agentloop.vcs.choose.MainLine),
        # which the closing lines ask where the tasks went. None: the run works in the checkout.
        self.main_line: Any = None
        # The key every lane of the run's plan carries (agentloop.run.scheduler._plan_key), read
        # once: None until the run first names a lane.
        self.lane_key: str | None = None
        # The lines that say where a `.git` an agent made in your checkout was moved (by
        # task number, agentloop.run.agent_run): said again first, on stderr, should the task
        # end in a stop or an error, whose line alone would leave it unsaid.
        self.moved_aside: dict[int, tuple[str, ...]] = {}
        # What the lanes know together, each set by what it serves:
        self._plan_watch()
        self._history_marks()
        self._landing_beside()

    def _plan_watch(self) -> None:
        """The plan file as the run last knew it: what tells your edit, a rename or a loss of it
        from the run's own (agentloop.run.plan_kept)."""
        # The plan's hash as the controller last read it; agent-loop's own edit of the plan (a
        # ticked box, agentloop.run.tick_boxes) moves it too, so that edit is no news.
        self.plan_hash = ""
        # The plan's bytes as last read (agentloop.run.plan_kept): put back should it vanish.
        self.plan_bytes: bytes | None = None
        # The bytes this run last wrote to the plan's copy in its state folder (plan_kept.copied).
        self.plan_copied: bytes | None = None
        # Each task's number in the plan as the controller last read it, by log name, once an
        # edit renumbered it (empty: the run's own numbers): a live line's `task N`. Replaced
        # whole, never changed in place: a lane reads it while another's answer reads the plan.
        self.plan_numbers: dict[str, int] = {}
        # Each task's heading in the plan as the controller last read it, by log name, once an
        # edit renamed it in place (agentloop.state.reconcile): where its box is ticked. The
        # task runs under the name it had; replaced whole, as `plan_numbers`.
        self.plan_groups: dict[str, str] = {}
        # Which file those bytes were read from (or written to: a tick, a plan put back), so a
        # file beside it is the plan renamed only when it is that file, not a copy of it.
        self.plan_id: FileId | None = None
        # That file held open (agentloop.run.plan_kept), so that once its name is gone the
        # run can tell whether it lives on (moved, into another folder too, or edited) and
        # where: an open file keeps its inode, so no file made later can pass for it.
        self.plan_fd: int | None = None
        # Where the user renamed the plan while the run worked (agentloop.run.plan_kept): it
        # is not put back, and no new task starts.
        self.plan_moved: Path | None = None
        # The plan gone with your switch to another branch, said (agentloop.run.plan_kept).
        self.plan_left = False
        # Each agent run's start and end (wall clock, ns; 0 while it runs), for a plan found
        # changed: written while an agent ran, it may be the agent's (agentloop.run.plan_kept).
        self.agent_runs: list[list[int]] = []

    def _history_marks(self) -> None:
        """What the run knows of the history its tasks landed on, so the check after each task
        (agentloop.run.history_check) reads only what is new."""
        # The finished tasks' change ids by task number, the history mark's input: read off
        # every record once a run, then brought up to date with each task a lane settles
        # (agentloop.run.lane), so a task's check costs the same in a plan of any size.
        self.done: dict[int, str] | None = None
        # The finished tasks' changes already gone from the history when the run began (you
        # reset or abandoned them; `--status` says so): None until the first lane looks.
        self.lost_before: set[str] | None = None
        self.looking = threading.Lock()  # held by the lane that finds lost_before
        # The tasks whose change you took back while the run worked (`jj abandon`): the line
        # said then, by task number (the run's), which the closing lines say again.
        self.taken_back: dict[int, str] = {}
        # git: the commits whose history was known to hold nothing `--status` would speak of
        # (no finished task's change lost, moved or reverted): the state's mark at the run's
        # start, or a look since (a commit's history never changes, in any lane). A mark is
        # taken only there or on the run's own commits on top (agentloop.run.history_check),
        # never over a commit of yours it did not read.
        self.whole: set[str] = set()
        # git: the commits whose history a look found something in (a task you reverted and
        # keep reverted): with only the run's own commits on top it still holds it, and is not
        # read again after every task (no mark is taken there either).
        self.unsound: set[str] = set()

    def _landing_beside(self) -> None:
        """A serial run's landing that runs beside the next task's agent
        (agentloop.run.beside)."""
        # A serial run's task whose landing runs beside the next task's agent, and the step
        # that completes it once landed (agentloop.run.beside.land_beside): (task, Completed).
        self.landing: tuple[TaskState, Any] | None = None
        # What the next agent's wait calls now and then while that landing runs: settles it
        # once landed (agentloop.run.beside.landed_meanwhile). Set by the lane, which runs the
        # agents, so the agent's side needs no import of the lane.
        self.meanwhile: Callable[[], None] | None = None
        # Tasks whose finished agent's work this run set aside while the task before landed
        # the longer way (agentloop.run.beside.after_landing), with that task's number: their
        # next attempt in this run brings it back, and says so (no run was stopped).
        self.set_aside: dict[int, int] = {}
        # The run's last lane, being removed beside the run's end (agentloop.run.scheduler's
        # close): the function that waits for its removal and returns its notes.
        self.leaving: Callable[[], list[str]] | None = None

    def halt(self) -> None:
        """Start no new task anywhere; running ones finish."""
        self._halt.set()

    def hold_landings(self) -> None:
        """Start no new task and land nothing more anywhere (main_breached)."""
        self.main_breached.set()
        self._halt.set()

    def halted(self) -> bool:
        """Whether the run is winding down."""
        return self._halt.is_set()

    def number(self, task: TaskState) -> int:
        """The task's number in the plan as the run last read it (`plan_numbers`): what a line
        said as the run goes names it by, as `--status` would then."""
        return self.plan_numbers.get(task.log_name, task.index)


class FleetJob(Protocol):
    """A CI job's part in its group's run (agentloop.fleet.job.Job)."""

    # Sessions kept on another machine (a job resumed elsewhere): never resumed here.
    elsewhere: frozenset[str]
    # Tasks of this plan whose commits the history holds (`Depends on:` in a fresh clone).
    landed: frozenset[int]

    def push(self, state: State) -> None:
        """After each task is settled: the group's branch and state, to the remote."""

    def trailers(self, task: TaskState) -> str:
        """The lines that end each task's commit message, naming the plan and the task."""


@dataclass(frozen=True)
class Run:
    """The shared parts of one run: project and state, agent, VCS, options, events, clock."""

    project: Project
    state: State
    agent: Agent
    vcs: Vcs
    options: RunOptions
    emit: Emit
    learnings: Learnings
    advisor: Advisor
    distiller: Distiller | None = None
    clock: Clock = SystemClock()
    tally: Tally = field(default_factory=Tally)
    shared: Shared = field(default_factory=Shared)
    workdir: Path | None = None     # a lane's own working copy; None: the project's root
    lane: str = ""                  # the group a parallel run's lane works on
    job: FleetJob | None = None     # a fleet job's part (agentloop.fleet.job), or None
    # --sandbox: the run's sandbox, for what runs code the agent may have written besides the
    # agent itself (the repository's hooks, agentloop.run.repo_hooks); None without it.
    sandbox: Sandbox | None = None

    @property
    def cwd(self) -> Path:
        """Where the agent and the user's checks run: the lane's working copy, or the root."""
        return self.workdir or self.project.root

    def model(self, role: str) -> str:
        """The model for a developer's or a reviewer's run: the option, else the agent's own."""
        if role == "reviewer":
            return self.options.review_model or self.agent.models.review
        return self.options.model or self.agent.models.task
