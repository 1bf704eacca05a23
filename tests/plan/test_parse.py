"""Task files: which lines become tasks, with what text, group, line and log name; load's errors."""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.errors import TaskFileError
from agentloop.plan.commonmark import PlanParser
from agentloop.plan.parse import UNGROUPED, Task, TaskFile, load, parse, slug

SAFE_LOG_NAME = re.compile(r"\d{3,}-[a-z0-9]+(-[a-z0-9]+)*--[a-z0-9]+(-[a-z0-9]+)*")


def write(tmp_path: Path, text: str | bytes, name: str = "tasks.md") -> Path:
    """A real task file holding exactly these bytes (no newline translation)."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def tasks_in(tmp_path: Path, text: str | bytes) -> tuple[Task, ...]:
    return load(write(tmp_path, text)).tasks


def texts(tasks: tuple[Task, ...]) -> list[str]:
    return [task.text for task in tasks]


def load_error(path: Path) -> str:
    with pytest.raises(TaskFileError) as caught:
        load(path)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    return message


# --- what a task is, and its text ------------------------------------------------------------

def test_indented_lines_and_lazy_lines_belong_to_the_task(tmp_path: Path) -> None:
    tasks = tasks_in(tmp_path, "- First line\n  second line\nlazy line\n\n  new paragraph\n"
                               "    indented more\n\n\n- Next task\n")
    assert texts(tasks) == ["First line\nsecond line\nlazy line\n\nnew paragraph\n  indented more",
                            "Next task"]


def test_nested_bullets_are_part_of_their_task_not_tasks(tmp_path: Path) -> None:
    text = "- Parent\n  - child one\n    - grandchild\n  * child two\n- Sibling\n"
    tasks = tasks_in(tmp_path, text)
    assert texts(tasks) == ["Parent\n- child one\n  - grandchild\n* child two", "Sibling"]


def test_a_fence_inside_an_item_is_part_of_the_task(tmp_path: Path) -> None:
    text = "- Run this:\n\n  ```sh\n  - not a task\n  make test\n  ```\n- Then\n"
    tasks = tasks_in(tmp_path, text)
    assert texts(tasks) == ["Run this:\n\n```sh\n- not a task\nmake test\n```", "Then"]


def test_code_blocks_at_the_left_margin_are_ignored(tmp_path: Path) -> None:
    text = ("```\n- in backticks\n```\n\n~~~md\n* in tildes\n~~~\n\n"
            "    - indented code\n\n- the only task\n\n```\n- unclosed fence\n")
    assert texts(tasks_in(tmp_path, text)) == ["the only task"]


def test_list_items_inside_block_quotes_are_not_tasks(tmp_path: Path) -> None:
    text = "> - quoted\n> - quoted too\n>\n> > 1. deeper\n\n- real\n"
    assert texts(tasks_in(tmp_path, text)) == ["real"]


def test_html_comments_holding_list_lines_are_ignored(tmp_path: Path) -> None:
    text = "<!-- - foo -->\n\n<!--\n- bar\n* baz\n-->\n\n<div>\n- html\n</div>\n\n- real\n"
    assert texts(tasks_in(tmp_path, text)) == ["real"]


def test_prose_tables_rules_and_link_definitions_are_ignored(tmp_path: Path) -> None:
    text = ("Some prose - with a dash.\n\n| a | b |\n| - | - |\n| - x | y |\n\n***\n\n"
            "[ref]: https://example.com\n\n- see [ref]\n")
    assert texts(tasks_in(tmp_path, text)) == ["see [ref]"]


def test_ordered_lists_are_tasks_and_their_numbers_are_ignored(tmp_path: Path) -> None:
    tasks = tasks_in(tmp_path, "3. three\n7. seven\n   more\n\n1) paren\n10. ten\n    indented\n")
    assert texts(tasks) == ["three", "seven\nmore", "paren", "ten\nindented"]


def test_every_bullet_character_makes_tasks(tmp_path: Path) -> None:
    assert texts(tasks_in(tmp_path, "- dash\n* star\n+ plus\n")) == ["dash", "star", "plus"]


def test_checkboxes_set_checked_and_leave_the_text(tmp_path: Path) -> None:
    tasks = tasks_in(tmp_path, "- [ ] open\n- [x] done\n- [X]   Done too\n- [ ]\tmore\n"
                               "- [y] not a box\n- [x]done no space\n- plain\n1. [x] numbered\n")
    # A checklist: its boxes are the tasks, its plain bullets (`[x]done` has no box) are notes;
    # an unknown box `[y]` is read as to do, with a warning.
    assert [(t.text, t.checked) for t in tasks] == [
        ("open", False), ("done", True), ("Done too", True), ("more", False),
        ("not a box", False), ("numbered", True)]


def test_empty_items_are_not_tasks(tmp_path: Path) -> None:
    # CommonMark: an item may start with one blank line, not two; then it is empty.
    text = "- \n-\n- [ ]\n- [x]   \n1.\n- real\n-\n  under the marker\n-\n\n  a paragraph\n"
    tasks = tasks_in(tmp_path, text)
    assert texts(tasks) == ["real", "under the marker"]
    assert [t.index for t in tasks] == [1, 2]


def test_item_indentation_is_removed_by_the_items_own_content_indent(tmp_path: Path) -> None:
    # Tabs stop every 4 columns; a tab that reaches past the indent leaves its extra columns.
    text = ("-   wide\n    next\n-\tfoo\n\tbar\n- foo\n\t  tab and spaces\n"
            "- foo\n\n      code\n-      code first\n")
    assert texts(tasks_in(tmp_path, text)) == [
        "wide\nnext", "foo\nbar", "foo\n    tab and spaces", "foo\n\n    code", "     code first"]


def test_a_list_item_indented_four_spaces_is_code_not_a_task(tmp_path: Path) -> None:
    assert texts(tasks_in(tmp_path, "    - code\n\n   - three spaces\n")) == ["three spaces"]


def test_text_is_kept_exactly_as_written(tmp_path: Path) -> None:
    text = ("- - starts with a dash\n- -rf `$(rm -rf /)` \"double\" 'single' `back`ticks\\\n"
            "- **bold** [link](https://x.y/?a=1&b=2) <b>html</b> &amp; $HOME ; | > <\n")
    assert texts(tasks_in(tmp_path, text)) == [
        "- starts with a dash",
        "-rf `$(rm -rf /)` \"double\" 'single' `back`ticks\\",
        "**bold** [link](https://x.y/?a=1&b=2) <b>html</b> &amp; $HOME ; | > <"]


# --- groups -----------------------------------------------------------------------------------

def test_tasks_before_the_first_heading_are_ungrouped(tmp_path: Path) -> None:
    tasks = tasks_in(tmp_path, "# Title\n\n- early\n\n## Later\n\n- late\n")
    assert [(t.group, t.text) for t in tasks] == [(UNGROUPED, "early"), ("Later", "late")]
    assert UNGROUPED == "(ungrouped)"


def test_a_heading_without_tasks_is_an_empty_group(tmp_path: Path) -> None:
    tasks = tasks_in(tmp_path, "## Empty\n\nJust prose.\n\n## Full\n- one\n\n## Empty at end\n")
    assert [(t.group, t.text) for t in tasks] == [("Full", "one")]


def test_only_level_two_headings_start_groups(tmp_path: Path) -> None:
    text = "## Build\n- a\n### Detail\n- b\n#### Deeper\n- c\n# Title\n- d\n## Ship\n- e\n"
    assert [(t.group, t.text) for t in tasks_in(tmp_path, text)] == [
        ("Build", "a"), ("Build", "b"), ("Build", "c"), ("Build", "d"), ("Ship", "e")]


def test_setext_headings_underlined_with_dashes_start_groups(tmp_path: Path) -> None:
    text = "Title\n=====\n\n- a\n\nSetext *group*\nover two lines\n---\n\n- b\n\n---\n\n- c\n"
    assert [(t.group, t.text) for t in tasks_in(tmp_path, text)] == [
        (UNGROUPED, "a"),
        ("Setext group over two lines", "b"),
        ("Setext group over two lines", "c")]


def test_group_name_is_the_headings_plain_text(tmp_path: Path) -> None:
    text = ("##   *Fix*  the `parse()` [link](http://x) ![alt](i.png) <b>x</b> &amp; \\# ##\n- a\n"
            "##\n- b\n")
    tasks = tasks_in(tmp_path, text)
    assert [t.group for t in tasks] == ["Fix the parse() link alt x & #", UNGROUPED]


# --- unicode, line ends, BOM --------------------------------------------------------------------

def test_unicode_is_kept_in_groups_and_texts_and_folded_in_slugs(tmp_path: Path) -> None:
    text = ("## 日本語の作業\n- 翻訳を直す 🙂\n## Café crème\n- Cafe\u0301 naïve ﬁx\n"
            "## עברית\n- לתקן את הבאג\n## 🚀\n- 🙂🙂\n")
    tasks = tasks_in(tmp_path, text)
    assert [(t.group, t.text) for t in tasks] == [
        ("日本語の作業", "翻訳を直す 🙂"), ("Café crème", "Cafe\u0301 naïve ﬁx"),
        ("עברית", "לתקן את הבאג"), ("🚀", "🙂🙂")]
    assert [t.log_name for t in tasks] == [
        "001-group--task", "002-cafe-creme--cafe-naive-fix", "003-group--task", "004-group--task"]


def test_crlf_and_lone_cr_line_ends(tmp_path: Path) -> None:
    tasks = tasks_in(tmp_path, b"## G\r\n\r\n- one\r\n  more\r\n- two\r\r- three\r")
    assert [(t.text, t.line, t.group) for t in tasks] == [
        ("one\nmore", 3, "G"), ("two", 5, "G"), ("three", 7, "G")]


def test_a_utf8_bom_is_accepted_and_hashed_but_not_text(tmp_path: Path) -> None:
    data = "\ufeff- first\n".encode()
    parsed = load(write(tmp_path, data))
    assert [(t.text, t.line) for t in parsed.tasks] == [("first", 1)]
    assert parsed.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert parse("\ufeff- first\n") == parsed.tasks


# --- index, line, summary, log name ------------------------------------------------------------

def test_index_and_line_of_each_task(tmp_path: Path) -> None:
    text = ("# T\n\n```\n- x\n```\n- one\n\n  two\n\n\n## G\n<!--\n- y\n-->\n1. three\n"
            "   - nested\n2. four\n")
    tasks = tasks_in(tmp_path, text)
    assert [(t.index, t.line, t.text.split("\n")[0]) for t in tasks] == [
        (1, 6, "one"), (2, 15, "three"), (3, 17, "four")]


def test_summary_is_the_first_line_folded_and_cut_at_a_word(tmp_path: Path) -> None:
    long = "Make the   parser `fast` and **correct** on all the inputs that anyone could write"
    text = f"- {long}\n  second line\n- {'x' * 80}\n- {'y' * 60}\n- {'z' * 61}\n-\n  late\n"
    tasks = tasks_in(tmp_path, text)
    assert [t.summary for t in tasks] == [
        "Make the parser `fast` and **correct** on all the inputs…",
        "x" * 59 + "…", "y" * 60, "z" * 59 + "…", "late"]
    assert all(len(t.summary) <= 60 for t in tasks)


def test_log_names_have_a_padded_index_and_short_slugs(tmp_path: Path) -> None:
    text = f"## {'Group word ' * 10}\n- {'Task word ' * 10}\n- ...\n"
    tasks = tasks_in(tmp_path, text)
    assert [t.log_name for t in tasks] == [
        "001-group-word-group-word-group--task-word-task-word-task-word-task-word",
        "002-group-word-group-word-group--task"]


def test_hostile_headings_never_make_a_path(tmp_path: Path) -> None:
    text = ("## ../../etc\n- ../../passwd\n## /\n- /\n## ..\n- ..\n## a/b\\c\n- C:\\x\n"
            "## -- \n- ~~\n## .\n- ~/.ssh\n")
    tasks = tasks_in(tmp_path, text)
    assert [t.log_name for t in tasks] == [
        "001-etc--passwd", "002-group--task", "003-group--task", "004-a-b-c--c-x",
        "005-group--task", "006-group--ssh"]
    assert all(SAFE_LOG_NAME.fullmatch(t.log_name) for t in tasks)


def test_slug_is_ascii_lowercase_and_limited() -> None:
    assert slug("Straße ÉTÉ — ①", 30) == "strasse-ete-1"
    assert slug("ab  cd", 3) == "ab"
    assert slug("日本", 30) == ""


# --- a big file ---------------------------------------------------------------------------------

def test_ten_thousand_tasks(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 10_001):
        if i % 1000 == 1:
            lines.append(f"## Part {i // 1000}")
        lines.append(f"- [{'x' if i % 7 == 0 else ' '}] Task {i}")
    tasks = tasks_in(tmp_path, "\n".join(lines) + "\n")
    assert len(tasks) == 10_000
    assert [t.index for t in tasks] == list(range(1, 10_001))
    assert len({t.log_name for t in tasks}) == 10_000
    assert all(SAFE_LOG_NAME.fullmatch(t.log_name) for t in tasks)
    assert tasks[0].log_name == "001-part-0--task-1"
    assert tasks[-1].log_name == "10000-part-9--task-10000"
    assert (tasks[-1].line, tasks[-1].group, tasks[-1].checked) == (10_010, "Part 9", False)
    assert sum(t.checked for t in tasks) == 10_000 // 7


def test_a_long_checklist_without_blank_lines_parses_in_linear_time() -> None:
    # marko's own link-definition pattern made this shape quadratic (58x for 10x the tasks).
    # Linear is a ratio of about 10; 25 leaves room for a busy machine. CPU time, the best of
    # five: wall time on a machine shared with other jobs made the ratio jump (CI saw it fail).
    def best_time(tasks: int) -> float:
        text = "".join(f"- [ ] task {i}\n" for i in range(tasks))
        times = []
        for _ in range(5):
            start = time.process_time()
            parse(text)
            times.append(time.process_time() - start)
        return min(times)

    assert best_time(4000) / best_time(400) < 25


# --- load: the file itself ---------------------------------------------------------------------

def test_load_returns_the_path_the_hash_of_the_raw_bytes_and_the_tasks(tmp_path: Path) -> None:
    data = b"## G\r\n- one\r\n"
    path = write(tmp_path, data)
    assert load(path) == TaskFile(path=path, sha256="sha256:" + hashlib.sha256(data).hexdigest(),
                                  tasks=parse(data.decode()))


def test_load_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.md"
    assert load_error(path) == f"task file {path} does not exist"


def test_load_a_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path) == f"task file {tmp_path} is a directory, not a file"


def test_load_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "## Café\n- ok\n- naïve\n".encode("latin-1"))
    assert load_error(path) == f"task file {path} is not UTF-8 text (byte 0xe9 on line 1)"
    path = write(tmp_path, b"- ok\r\n- ok\r- \xff\n")
    assert load_error(path) == f"task file {path} is not UTF-8 text (byte 0xff on line 3)"


def test_load_a_file_with_nul_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, b"- a task\n\x00\x01binary")
    assert load_error(path) == f"task file {path} is not text (it contains NUL bytes)"


def test_load_a_utf16_file(tmp_path: Path) -> None:
    path = write(tmp_path, "- a task\n".encode("utf-16"))
    assert load_error(path) == f"task file {path} is UTF-16: save it as UTF-8"


@pytest.mark.parametrize("text", ["", "\ufeff", "# Title\n\nJust prose.\n", "## Empty\n- \n",
                                  "> - quoted\n", "```\n- fenced\n```\n"])
def test_load_a_file_without_tasks(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert load_error(path) == (f"task file {path} has no tasks: "
                                "write each task as a list item, like `- fix the login bug`")


def test_error_messages_stay_on_one_line_whatever_the_path(tmp_path: Path) -> None:
    path = tmp_path / "two\nlines.md"
    quoted = '"' + str(path).replace("\n", "\\n") + '"'
    assert load_error(path) == f"task file {quoted} does not exist"
    for breaker, escaped in (("\u2028", "\\342\\200\\250"), ("\x85", "\\302\\205")):
        path = tmp_path / f"a{breaker}b.md"
        assert load_error(path) == f'task file "{tmp_path}/a{escaped}b.md" does not exist'



# --- properties --------------------------------------------------------------------------------

MARKDOWNISH = st.lists(st.sampled_from(
    list("-*+#>`~[]xX ()!<>/\\\t\n\r\f0123456789.)_=|:\"'&;aé日🙂")
    + ["\u0301", "\u00a0", "\ufeff", "\x00", "\u2028", "\x85", "<!--", "-->", "```", "- ", "1. "]),
    max_size=150).map("".join)
LINES = st.lists(st.tuples(
    st.sampled_from(["", "- ", "* ", "+ ", "1. ", "2) ", "  ", "    ", "\t", "> ", "## ", "### ",
                     "---", "===", "```", "~~~", "<!-- ", "-->", "- [ ] ", "- [x] ", "[a]: /u"]),
    st.text(max_size=20))).map(lambda lines: "\n".join(a + b for a, b in lines))


@settings(max_examples=200, deadline=None, database=None)
@given(st.one_of(MARKDOWNISH, LINES, st.text(max_size=200)))
def test_parse_returns_well_formed_tasks_or_raises_task_file_error(text: str) -> None:
    try:
        tasks = parse(text)
    except TaskFileError:
        return
    normalized = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    assert [t.index for t in tasks] == list(range(1, len(tasks) + 1))
    assert len({t.log_name for t in tasks}) == len(tasks)
    for task in tasks:
        assert task.text.strip() and task.text == task.text.rstrip()
        assert SAFE_LOG_NAME.fullmatch(task.log_name)
        assert 0 < len(task.summary) <= 60 and "\n" not in task.summary
        assert 1 <= task.line <= normalized.count("\n") + 1


def test_check_blocks_are_never_tasks_and_apply_to_file_or_group() -> None:
    tasks = parse("```agent-loop-checks\n# all\npytest -q\n```\n- zero\n## A\n- one\n"
                  "```agent-loop-checks\nmake a && echo '&amp;'\n```\n- two\n## B\n- three\n"
                  "```sh\n- a fence of another kind is ignored as before\n```\n")
    assert [(t.text, t.checks) for t in tasks] == [
        ("zero", ("pytest -q",)), ("one", ("pytest -q", "make a && echo '&amp;'")),
        ("two", ("pytest -q", "make a && echo '&amp;'")), ("three", ("pytest -q",))]


@settings(max_examples=200, deadline=None, database=None)
@given(st.one_of(MARKDOWNISH, LINES))
def test_a_plan_read_with_headings_inline_only_reads_as_one_read_whole(text: str) -> None:
    # A plan's reading parses the inline markup of its headings only: nothing else it reads
    # may depend on the rest.
    from agentloop.plan import markdown

    text = text.replace("\r\n", "\n").replace("\r", "\n")
    whole = markdown._Walk(text, False).run(list(PlanParser().parse(text).children))
    some = markdown._Walk(text, False).run(list(PlanParser().parse(text, inline=False).children))
    assert some == whole


def test_a_yaml_front_matter_block_is_neither_tasks_nor_a_group(tmp_path: Path) -> None:
    # A plan kept where markdown carries front matter (a docs site, Obsidian, spec-kit's
    # template): its `tags:` list was two tasks an agent was paid to run ("backend", "api"),
    # and a closing `---` under `title: Plan` a setext heading, the group "title: Plan".
    front = "---\ntitle: Plan\ntags:\n  - backend\n  - api\n---\n"
    tasks = tasks_in(tmp_path, front + "\n- add the endpoint\n- write tests\n")
    assert [(t.text, t.line, t.group) for t in tasks] == [
        ("add the endpoint", 8, UNGROUPED), ("write tests", 9, UNGROUPED)]
    tasks = tasks_in(tmp_path, "---\ntitle: Plan\n---\n- [ ] one\n")
    assert [(t.text, t.group) for t in tasks] == [("one", UNGROUPED)]
    # Not front matter: a rule that opens the file and is never closed, or is not the first line.
    assert texts(tasks_in(tmp_path, "---\n- one\n- two\n")) == ["one", "two"]
    assert texts(tasks_in(tmp_path, "Intro\n---\n- one\n---\n")) == ["one"]
    assert texts(tasks_in(tmp_path, "---\n- one\n---\n- two\n")) == ["one", "two"]
