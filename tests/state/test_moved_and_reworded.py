"""A done task moved under another heading and reworded in the same edit stays done; a new task
whose words say other work (an opposite, another number, a section put in another's place)
runs. With the fake claude, which counts the agent's runs, and real git."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentloop.plan import parse as taskfile
from agentloop.state.reconcile import reconcile
from agentloop.state.schema import TaskState
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git_project, state_of
from tests.support.runner import agent_loop

BEFORE = """\
## A
- add the login form
- add a lock to the door
- add a getter for name
- run test_login
- convert json to yaml
- do step 1 of the migration

## B
- write the readme
"""
# The login form moved under B and reworded (the same work); every other task of A replaced by
# one whose words say other work, in its own place.
AFTER = """\
## A
- add an unlock to the door
- add a setter for name
- run test_logout
- convert yaml to json
- do step 2 of the migration

## B
- write the readme
- add a login form
"""


def test_a_done_task_moved_and_reworded_stays_done_and_other_work_runs(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, BEFORE)
    first = agent_loop(work, "--vcs", "git", "--no-distill")
    assert first.returncode == 0, first.stdout + first.stderr
    paid = fake_claude.task_prompts()
    assert len(paid) == 7
    (work / "tasks.md").write_text(AFTER)
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    # Every task of A ran (its words say other work); the login form did not run again.
    ran = fake_claude.task_prompts()[len(paid):]
    assert len(ran) == 5, again.stdout
    assert sorted(t for t in AFTER.splitlines()[1:6] for p in ran if t[2:] in p) == \
        sorted(AFTER.splitlines()[1:6]), again.stdout
    tasks = state_of(work)["tasks"]
    assert [(t["task"], t["status"]) for t in tasks][-1] == ("add a login form", "completed")
    assert "task 7's words changed after it was done: it stays done (not paid for again); " \
        "`agent-loop tasks.md --task 7 --again` runs the new words" in again.stdout


def test_a_quantity_opening_a_done_task_changed_runs_it(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    """`1.5 second timeout` made `2.5 second timeout` was taken for Kiro's numbering moved:
    the task stayed done and its new work never ran."""
    work = git_project(tmp_path, "- [ ] add the upload\n- [ ] 1.5 second timeout for it\n")
    assert agent_loop(work, "--no-distill").returncode == 0
    assert len(fake_claude.task_prompts()) == 2
    (work / "tasks.md").write_text("- [ ] add the upload\n- [ ] 2.5 second timeout for it\n")
    again = agent_loop(work, "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    ran = fake_claude.task_prompts()[2:]
    assert len(ran) == 1 and "2.5 second timeout for it" in ran[0], again.stdout


def saved(tmp_path: Path, text: str) -> list[TaskState]:
    """The records of `text`'s tasks, every one done."""
    (tmp_path / "old.md").write_text(text)
    records = [TaskState.from_task(t) for t in taskfile.load(tmp_path / "old.md").tasks]
    for r in records:
        r.status, r.change_id, r.session_id = "completed", f"change{r.index}", "s1"
    return records


def edited(tmp_path: Path, old: str, new: str) -> list[tuple[str, str, str]]:
    """(group, words, status) of each task of `new`, once the records of `old` (all done) are
    matched to it."""
    (tmp_path / "new.md").write_text(new)
    changed = reconcile(saved(tmp_path, old), taskfile.load(tmp_path / "new.md"))
    return [(t.group, t.task, t.status) for t in changed.tasks]


OTHER_WORK = [("add a lock to the door", "add an unlock to the door"),
              ("add a getter for name", "add a setter for name"),
              ("run test_login", "run test_logout"),
              ("convert json to yaml", "convert yaml to json"),
              ("do step 1 of the migration", "do step 2 of the migration"),
              ("enable the cache", "disable the cache"),
              ("lock the door", "do not lock the door")]


@pytest.mark.parametrize("was,now", OTHER_WORK)
@pytest.mark.parametrize("where", ["in its place", "under another heading"])
def test_words_that_say_other_work_run(tmp_path: Path, was: str, now: str, where: str) -> None:
    old = f"## A\n- [ ] first\n- [ ] {was}\n- [ ] last\n\n## B\n- [ ] other\n"
    new = f"## A\n- [ ] first\n- [ ] {now}\n- [ ] last\n\n## B\n- [ ] other\n" \
        if where == "in its place" else \
        f"## A\n- [ ] first\n- [ ] last\n\n## B\n- [ ] other\n- [ ] {now}\n"
    tasks = edited(tmp_path, old, new)
    assert [status for _, task, status in tasks if task == now] == ["pending"]
    assert {status for _, task, status in tasks if task != now} == {"completed"}


@pytest.mark.parametrize("heading", ["B", "A, renamed"])
def test_a_done_task_moved_and_lightly_reworded_stays_done(tmp_path: Path, heading: str) -> None:
    old = "## A\n- [ ] add the login form\n- [ ] add tests\n\n## B\n- [ ] other\n"
    if heading == "B":     # moved under another heading, reworded
        new = "## A\n- [ ] add tests\n\n## B\n- [ ] other\n- [ ] add a login form\n"
    else:                  # its heading renamed, both its tasks reworded
        new = "## A, renamed\n- [ ] add a login form\n- [ ] add the tests\n\n## B\n- [ ] other\n"
    tasks = edited(tmp_path, old, new)
    assert {status for _, _, status in tasks} == {"completed"}
    assert (heading, "add a login form", "completed") in tasks


def test_a_section_put_in_place_of_another_runs_its_tasks(tmp_path: Path) -> None:
    # Not the old section renamed: its `add tests` is another section's tests.
    old = "## Auth\n- [ ] add the login form\n- [ ] add tests\n\n## Docs\n- [ ] write it\n"
    new = "## Billing\n- [ ] add the invoice model\n- [ ] add tests\n\n## Docs\n- [ ] write it\n"
    assert edited(tmp_path, old, new) == [("Billing", "add the invoice model", "pending"),
                                          ("Billing", "add tests", "pending"),
                                          ("Docs", "write it", "completed")]


def test_a_renamed_heading_keeps_its_done_tasks(tmp_path: Path) -> None:
    old = "## Auth\n- [ ] add the login form\n- [ ] add tests\n"
    assert {s for _, _, s in edited(tmp_path, old, old.replace("Auth", "Login"))} == \
        {"completed"}


def test_tasks_renumbered_by_one_inserted_above_stay_done(tmp_path: Path) -> None:
    old = "## A\n- [ ] 1. set up the shell\n- [ ] 2. build the api\n"
    new = "## A\n- [ ] 1. write the spec\n- [ ] 2. set up the shell\n- [ ] 3. build the api\n"
    assert [s for _, _, s in edited(tmp_path, old, new)] == ["pending", "completed", "completed"]


def test_reconcile_of_fifty_done_tasks_moved_and_reworded_stays_fast(tmp_path: Path) -> None:
    kinds = ["parser", "cache", "login form", "invoice model", "retry loop"]
    old = "## Old\n" + "".join(f"- [ ] add the {kinds[i % 5]} of module m{i}\n"
                               for i in range(50))
    new = "## New\n" + "".join(f"- [ ] add a {kinds[i % 5]} of module m{i}\n" for i in range(50))
    (tmp_path / "new.md").write_text(new)
    records, plan = saved(tmp_path, old), taskfile.load(tmp_path / "new.md")
    started = time.perf_counter()
    changed = reconcile(records, plan)
    took = time.perf_counter() - started
    assert len(changed.reworded_done) == 50 and changed.added == ()
    assert took < 0.5   # a few ms; a busy CI machine is given a wide margin


def test_done_tasks_moved_out_of_order_and_reworded_keep_their_own_records(
        tmp_path: Path) -> None:
    old = "## A\n- [ ] add the login form\n- [ ] write the parser tests\n- [ ] keep\n\n## B\n" \
        "- [ ] other\n"
    new = "## A\n- [ ] keep\n\n## B\n- [ ] other\n- [ ] write the parsers tests\n" \
        "- [ ] add a login form\n"
    (tmp_path / "new.md").write_text(new)
    changed = reconcile(saved(tmp_path, old), taskfile.load(tmp_path / "new.md"))
    assert [(t.task, t.status, t.done_as, t.change_id) for t in changed.tasks][2:] == [
        ("write the parsers tests", "completed", "write the parser tests", "change2"),
        ("add a login form", "completed", "add the login form", "change1")]


@pytest.mark.parametrize("new", [
    # Two sections merged under a new heading.
    "## Both\n- [ ] add the login form\n- [ ] add tests\n- [ ] write the guide\n",
    # One section split under two new headings.
    "## Forms\n- [ ] add the login form\n- [ ] add tests\n\n## Guide\n- [ ] write the guide\n"])
def test_sections_merged_or_split_under_new_headings_keep_their_done_tasks(
        tmp_path: Path, new: str) -> None:
    old = "## Auth\n- [ ] add the login form\n- [ ] add tests\n\n## Docs\n- [ ] write the guide\n"
    assert {s for _, _, s in edited(tmp_path, old, new)} == {"completed"}


def test_a_new_section_of_one_task_the_old_one_had_runs_it(tmp_path: Path) -> None:
    old = "## Auth\n- [ ] add the login form\n- [ ] add the logout\n- [ ] add tests\n"
    assert edited(tmp_path, old, "## Billing\n- [ ] add tests\n") == [
        ("Billing", "add tests", "pending")]


def test_a_heading_renamed_with_tasks_added_under_it_keeps_its_done_task(tmp_path: Path) -> None:
    """The new heading's tasks were mostly new, so the section was taken for another put in the
    old one's place, and its done task, the same words, ran again."""
    old = "## Auth\n- [ ] add the login form\n"
    new = "## Login\n- [ ] add the login form\n- [ ] add the logout\n- [ ] add tests\n"
    assert [s for _, _, s in edited(tmp_path, old, new)] == ["completed", "pending", "pending"]


@pytest.mark.parametrize("was,now,stays", [
    ("o2", "o2 now", True),                  # a word added to a task named by a number
    ("T003 [P] third", "T004 [P] third", True),   # spec-kit's ids, renumbered
    ("2. build the api", "3. build the api", True),
    ("move to the v2 api", "move to the v3 api", False),
    ("3 retries for the upload", "5 retries for the upload", False),   # a count, not numbering
    # A dotted number inside the sentence is what the task is about, never the list's own
    # numbering: each stayed done, its new work never run.
    ("add a 1.5 second timeout", "add a 2.5 second timeout", False),
    ("pin the client to v1.2", "pin the client to v1.3", False),
    ("allow 10.0.0.1 in the firewall", "allow 10.0.0.2 in the firewall", False),
    # Opening the line, alone among tasks with no numbers, it was taken for the list's own
    # numbering (Kiro's `1.2`) and the task stayed done.
    ("1.5 second timeout for the upload", "2.5 second timeout for the upload", False),
    ("10.0.0.1 in the allow list", "10.0.0.2 in the allow list", False),
    ("1. build the api", "2. build the api", True)])
def test_a_number_is_other_work_unless_it_numbers_the_list(tmp_path: Path, was: str, now: str,
                                                           stays: bool) -> None:
    tasks = edited(tmp_path, f"## A\n- [ ] {was}\n", f"## A\n- [ ] {now}\n")
    assert tasks == [("A", now, "completed" if stays else "pending")]


@pytest.mark.parametrize("where", ["in its place", "under another heading"])
def test_a_dotted_number_in_a_numbered_list_is_its_numbering(tmp_path: Path, where: str) -> None:
    """A task inserted above renumbers the ones after it (Kiro's `1.2` becomes `1.3`): the same
    tasks still, done; a number in their words changed is other work."""
    old = "## A\n- [ ] 1.1 set up\n- [ ] 1.2 add a 1.5 second timeout\n- [ ] 1.3 log it\n" \
        "\n## B\n- [ ] 2.1 other\n"
    new = "## A\n- [ ] 1.1 set up\n- [ ] 1.2 add a retry\n- [ ] 1.3 add a 1.5 second timeout\n" \
        "- [ ] 1.4 log it at 2.5 seconds\n\n## B\n- [ ] 2.1 other\n"
    if where != "in its place":
        new = "## A\n- [ ] 1.1 set up\n- [ ] 1.2 add a retry\n\n## B\n- [ ] 2.1 other\n" \
            "- [ ] 2.2 add a 1.5 second timeout\n- [ ] 2.3 log it at 2.5 seconds\n"
    assert [(task, status) for _, task, status in edited(tmp_path, old, new)] == [
        ("1.1 set up", "completed"), ("1.2 add a retry", "pending"),
        *([("1.3 add a 1.5 second timeout", "completed"),
           ("1.4 log it at 2.5 seconds", "pending"), ("2.1 other", "completed")]
          if where == "in its place" else
          [("2.1 other", "completed"), ("2.2 add a 1.5 second timeout", "completed"),
           ("2.3 log it at 2.5 seconds", "pending")])]


SAME_WORK = [("add a noop handler", "add a no-op handler"),        # a word split by a dash
             ("don't cache the token", "do not cache the token"),  # a negation said in full
             ("never retry the upload", "do not ever retry the upload"),
             ("add 2 tests for the parser", "add two tests for the parser"),  # a number spelt
             ("add the login form", "add a login form")]


@pytest.mark.parametrize("was,now", SAME_WORK)
@pytest.mark.parametrize("where", ["in its place", "under another heading"])
def test_words_that_say_the_same_work_keep_the_task_done(tmp_path: Path, was: str, now: str,
                                                          where: str) -> None:
    """The rules that tell other work (a `not` added, another number) read a negation or a
    number said another way as the same work: a done task was paid again for `no-op`."""
    old = f"## A\n- [ ] first\n- [ ] {was}\n- [ ] last\n\n## B\n- [ ] other\n"
    new = f"## A\n- [ ] first\n- [ ] {now}\n- [ ] last\n\n## B\n- [ ] other\n" \
        if where == "in its place" else \
        f"## A\n- [ ] first\n- [ ] last\n\n## B\n- [ ] other\n- [ ] {now}\n"
    tasks = edited(tmp_path, old, new)
    assert {status for _, _, status in tasks} == {"completed"}, tasks


def test_a_spelt_number_never_makes_other_work(tmp_path: Path) -> None:
    """`task eight` reworded as `task eight, reworded` was said as another task put in its
    place (`eight` counted as a number only before a word)."""
    assert edited(tmp_path, "## A\n- [ ] task eight\n", "## A\n- [ ] task eight, reworded\n"
                  ) == [("A", "task eight, reworded", "completed")]


def test_renamed_headings_keep_the_records_of_their_tasks_to_do(tmp_path: Path) -> None:
    # Both headings renamed in place: each task to do keeps its record (its session and log
    # name), none is removed and added again as moved under another heading.
    old = "## Backend\n- [ ] one\n- [ ] two\n\n## Frontend\n- [ ] three\n- [ ] four\n"
    records = saved(tmp_path, old)
    for r in records[1:]:
        r.status = "pending"
    (tmp_path / "new.md").write_text(old.replace("Backend", "Server")
                                     .replace("Frontend", "Client"))
    changed = reconcile(records, taskfile.load(tmp_path / "new.md"))
    assert (changed.added, changed.removed, changed.moved) == ((), (), ())
    assert [(t.group, t.status, t.session_id, t.log_name) for t in changed.tasks] == [
        ("Server", "completed", "s1", records[0].log_name),
        ("Server", "pending", "s1", records[1].log_name),
        ("Client", "pending", "s1", records[2].log_name),
        ("Client", "pending", "s1", records[3].log_name)]


def test_a_heading_renamed_with_its_tasks_changed_is_not_taken_as_renamed(
        tmp_path: Path) -> None:
    # The tasks under it changed too: not the heading the only change; its task to do is
    # moved under another heading, as before.
    old = "## A\n- [ ] one\n- [ ] two\n"
    records = saved(tmp_path, old)
    records[1].status = "pending"
    (tmp_path / "new.md").write_text("## Alpha\n- [ ] two\n- [ ] one\n")
    changed = reconcile(records, taskfile.load(tmp_path / "new.md"))
    assert changed.moved == ((records[1].log_name, 1),)


@pytest.mark.parametrize("first", ["running", "completed"])
def test_two_headings_swapped_keep_each_record_with_its_task(tmp_path: Path,
                                                             first: str) -> None:
    # `## Backend` and `## Frontend` swap names, their tasks unchanged and in place: the
    # records were paired as rewords of the other group's tasks (task one's pending record
    # given to "three", "two" and "three" taken as the done one reworded). Each record stays
    # with its own task, under the name its heading has now.
    old = "## Backend\n- [ ] one\n- [ ] two\n\n## Frontend\n- [ ] three\n- [ ] four\n"
    records = saved(tmp_path, old)
    records[0].status = first
    for r in records[1:]:
        r.status, r.change_id, r.session_id = "pending", None, f"s{r.index}"
    (tmp_path / "new.md").write_text(old.replace("Backend", "TMP").replace("Frontend", "Backend")
                                     .replace("TMP", "Frontend"))
    changed = reconcile(records, taskfile.load(tmp_path / "new.md"))
    assert (changed.added, changed.removed, changed.edited, changed.reworded_done) == (
        (), (), (), ())
    assert [(t.group, t.task, t.status, t.session_id, t.log_name) for t in changed.tasks] == [
        ("Frontend", "one", first, "s1", records[0].log_name),
        ("Frontend", "two", "pending", "s2", records[1].log_name),
        ("Backend", "three", "pending", "s3", records[2].log_name),
        ("Backend", "four", "pending", "s4", records[3].log_name)]


def test_a_heading_taking_a_kept_headings_name_is_not_taken_as_renamed(
        tmp_path: Path) -> None:
    # `## B` renamed `## A` while A's own task was deleted: A is not another heading's name
    # now, so B's task to do is moved under another heading, as before (not carried across).
    old = "## A\n- [ ] one\n\n## B\n- [ ] two\n"
    records = saved(tmp_path, old)
    records[1].status = "pending"
    (tmp_path / "new.md").write_text("## A\n- [ ] two\n")
    changed = reconcile(records, taskfile.load(tmp_path / "new.md"))
    assert changed.moved == ((records[1].log_name, 1),)
