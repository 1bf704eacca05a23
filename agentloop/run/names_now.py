"""How what a user reads after a run's end names its tasks: by their numbers in the plan as it
reads then, which `--status` shows right after (an edit the run took in may have renumbered
them: agentloop.run.loop records that plan at the run's end), and a task the plan no longer
has by its words, its old number being another task's now."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from agentloop.errors import AgentLoopError
from agentloop.ondemand import dataclass
from agentloop.plan import parse
from agentloop.run import plan_kept
from agentloop.run.context import Run
from agentloop.state.reconcile import Reconciled, reconcile
from agentloop.state.schema import TaskState


@dataclass(frozen=True)
class Names:
    """The run's tasks, by the run's own numbers, as the closing lines name them."""

    # Each task's number in the plan now by its number in the run, for the tasks the plan still
    # has; None: the plan the run began with (no edit taken in), every number its own.
    numbers: Mapping[int, int] | None = None
    words: Mapping[int, str] = field(default_factory=dict)   # every task's, by the run's number
    # The plan's tasks now by status, counted from the records the state takes at the run's
    # end (the reconcile's, which know each task by its identity: those the run did, where
    # they belong; those added while it worked, pending), as `--status` counts them right
    # after; None: no edit taken in, the run's own records are those.
    counts: Mapping[str, int] | None = None

    def kept(self, index: int) -> bool:
        """Whether the plan as it reads now still has the run's task `index`."""
        return self.numbers is None or index in self.numbers

    def number(self, index: int) -> int | None:
        """The task's number in the plan now; None: the plan no longer has it."""
        return index if self.numbers is None else self.numbers.get(index)

    def __call__(self, index: int) -> str:
        """`task 3`, or `task "its words"` when the plan no longer has it."""
        number = self.number(index)
        return f"task {number}" if number is not None else f'task "{self.words.get(index, "")}"'

    def headed(self, text: str, index: int) -> str:
        """A line that begins `task N` (the task `index`, by the number the plan gave it when
        the line was said), begun with its name now."""
        return f"{self(index)} {text.split(' ', 2)[2]}"

    def within(self, text: str, index: int) -> str:
        """A line written with the run's numbers (the task `index`'s recorded error, a note
        said while it ran), naming tasks as the plan reads now: `task 5` where it stands for
        that task (not `task 50`), and every task a `--task` names (the command that goes on,
        `--task 5-7`: each task of it by its number now, `--task 3,8`, so that it runs the
        same tasks; one the plan no longer has left out, there being no number to give it;
        a `--task` of no task the plan still has stays as it was)."""
        if self.numbers is None:
            return text
        text = self.command(text)
        if self.numbers.get(index) == index:
            return text
        old = f"task {index}"
        out, at = [], 0
        while (hit := text.find(old, at)) >= 0:
            end = hit + len(old)
            before = text[hit - 1] if hit else " "
            # A `--task N` is the plan's number now (above): another task's, maybe.
            if (end < len(text) and text[end].isdigit()) or before.isalnum() or before == "-":
                out.append(text[at:end])
            else:
                out.append(text[at:hit] + self(index))
            at = end
        return "".join(out) + text[at:]

    def command(self, text: str) -> str:
        """`text` with each `--task` it gives (the run's numbers) as the plan numbers the same
        tasks now (within). Every spelling the CLI takes, as a shell gives it back (the stop's
        command is shlex.join's): `--task 5-7`, `--task=5,7`, `--task '5, 7'` and
        `'--task=5, 7'` (a space after a comma quoted)."""
        if self.numbers is None:
            return text
        import re  # the run's end only

        def renumbered(hit: re.Match[str]) -> str:
            whole, sep, quoted, bare = hit.group("whole", "sep", "quoted", "bare")
            value = next(v for v in (whole, quoted, bare) if v is not None)
            now = self._spec(value)
            if now is None:
                return hit.group(0)
            return f"--task={now}" if whole is not None else f"--task{sep}{now}"

        return re.sub(_TASK_OPTION, renumbered, text)

    def _spec(self, spec: str) -> str | None:
        """A `--task` value of the run's numbers (`5`, `5-7`, `5, 7`: whatever the CLI takes,
        read as it reads it) as the plan numbers the same tasks now; None when it names none
        the plan still has, or is no value the CLI takes."""
        from agentloop.options.record import task_numbers

        try:
            picked = task_numbers((spec,))
        except ValueError:
            return None
        now = sorted({n for i in picked if (n := self.number(i)) is not None})
        if not now:
            return None
        runs: list[list[int]] = []
        for n in now:
            if runs and n == runs[-1][1] + 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


# A `--task` and its value in a command as a shell reads it: the whole option quoted (a space
# in `--task=5, 7`), its value quoted, or a bare one (the run's own lines write those).
_TASK_OPTION = (r"'--task=(?P<whole>[^']*)'"
                r"|--task(?P<sep>[ =])(?:'(?P<quoted>[^']*)'|(?P<bare>\d[\d,-]*))")


def names_now(run: Run) -> Names:
    """The names of the plan the controller last read, edited while the run worked, which the
    records take at the run's end (loop._plan_taken, with the same conditions); the run's own
    numbers when there was no such edit, or the plan cannot be read. A plan with no task left
    names none by a number."""
    data = run.shared.plan_bytes
    if run.job is not None or data is None or \
            parse.file_hash(data) == run.state.task_file_hash:
        return Names()
    try:
        # A plan whose every task was deleted (its words left) holds none of them: each is
        # named by its words and counted as none of the plan's, as `--status` right after has
        # none (loop._plan_taken records no such plan: the next run's start says it).
        changes = reconcile(run.state.tasks, parse.from_bytes(plan_kept.current(run), data,
                                                              emptied=True))
    except AgentLoopError:
        return Names()
    return matched(run.state.tasks, changes)


def matched(tasks: list[TaskState], changes: Reconciled) -> Names:
    """Each task's number in the edited plan by its number in the run, matched by its log
    name (the reconcile keeps a matched record's); a task reworded there is another task now,
    its words gone, as a removed one's are, but for a done one, which stays done."""
    now = {t.log_name: t.index for t in changes.tasks}
    gone = {r.log_name for r in changes.dropped}
    numbers = {t.index: now[t.log_name] for t in tasks
               if t.log_name in now and t.log_name not in gone}
    # A task to do under a renamed heading is the plan's still, by its new number; so is a
    # done task reworded (it stays done, under its new words' log name).
    moved = dict(changes.moved + changes.reworded_from)
    numbers.update({t.index: moved[t.log_name] for t in tasks if t.log_name in moved})
    from collections import Counter  # an edited plan's end only

    return Names(numbers, {t.index: t.summary for t in tasks},
                 Counter(str(t.status) for t in changes.tasks))
