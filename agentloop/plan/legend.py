"""Bullets that open with a bracket but are not tasks: a plan's legend (`- [P] tasks = different
files`, `- **[Story]**: which story`, `- [x] = done`) and bracketed lines in a section about the
file itself (Notes, Legend, Format, Conventions, References, in the plan's language).

A bracket holding no checkbox state (`[P]`, `[US1]`, a word) is a note when its line explains it
or when it sits in such a section; anywhere else it keeps the reading of any other bullet. A real
box (`[ ]`, `[x]`, ...) is a note only when its line explains it (`- [ ] = not started`) or it
sits in a legend proper (Legend, Key): a Notes section may well hold a real task.
"""

from __future__ import annotations

import re
from functools import cache

STATES = (" ", "-", "~", "/", "x", "X")   # every box character that says to do or done

# The bracket a bullet opens with, maybe bold or in code: `[P]`, `**[P]**`, `` `[US1]` ``; not
# a link (`[text](url)`) nor a footnote (`[^1]`).
_LEAD = re.compile(r"(\*\*|__|`)?\[([^\]\n^][^\]\n]{0,30})\]\1?(?![(\[])")
# Right after the bracket: a separator (`: …`, `= …`, `— …`), a word or two and `=`
# (`tasks = …`, `任务 = …`), or a verb of meaning (`marks …`, `label maps …`; not `Labels for
# the form`, which a task may well say).
_SEPARATOR = r"\s*(?:[:=：＝→]|->|[–—]|-\s)"
_EXPLAINS = (
    _SEPARATOR + r"|\s*[^\s=＝]{1,20}\s*[=＝]"
    r"|\s*(?:marks|means|indicates|denotes|stands\s+for)\b"
    r"|\s*(?:label|tag|marker|prefix)\s+(?:maps|marks|means|links|ties|names|says)\b"
    r"|\s*(?:标签|標籤|标记|標記|表示|代表|意味|意思是|とは|は)|(?:는|은)\s")
_BOX_EXPLAINS = _SEPARATOR + r"|\s*(?:means|stands\s+for|表示|代表|とは)"
# A heading that is just the word, or the word and a colon, a bracket, `&` ... ("Format: `[ID]`",
# "Notes"), not the start of a longer title ("Key features"); words in scripts without spaces
# may go on ("注意事项").
_WORDS = r"^\W*(?:\d+(?:\.\d+)*[.)]?\s*)?(?:(?:task|plan|file|status)\s+)?(?:(?:{})\s*(?:$|[^\w\s])|(?:{}))"
# Headings of sections about the file itself (or of reference material: `- [1] Smith, 2020`),
# in the languages plans are written in.
_ABOUT_FILE = _WORDS.format(
    "notes?|legend|key|format|conventions?|markers?|symbols?|notation|glossary"
    "|how\\s+to\\s+read|about\\s+this\\s+(?:file|plan)"
    "|references?|resources|links|see\\s+also|sources"
    "|notas?|remarques?|hinweise|anmerkungen|legende|примечани[ея]|заметки|легенда",
    "注意|说明|說明|备注|備註|备考|備考|图例|圖例|格式|约定|約定|凡例|記法|書式|メモ|注記|参考|參考"
    "|참고|비고|범례|형식|노트")
_LEGEND = _WORDS.format("legend|key|markers?|symbols?|notation|legende|легенда",
                        "图例|圖例|凡例|범례")


@cache
def _pattern(source: str) -> re.Pattern[str]:
    # Compiled when first asked for: most plans have no bracket nor box a legend could explain,
    # and these case-blind patterns over several scripts are costly to compile at every start.
    return re.compile(source, re.IGNORECASE)


def why_note(body: str, box: str | None, sections: list[str]) -> str | None:
    """Why a list item is a note and not a task, if it is one by the rules above: `body` is its
    text after the box (`box` its character, None without one), `sections` the headings it is
    under, outermost first."""
    if box is not None and box not in STATES:
        label, rest = box, body
    elif box is None and (lead := _LEAD.match(body)):
        label, rest = lead.group(2), body[lead.end():]
    elif box is not None:
        shown = f"[{box}]"
        if _pattern(_BOX_EXPLAINS).match(body):
            return f"explains the {shown} box: a legend line, not a task"
        legend = next((s for s in sections if _pattern(_LEGEND).match(s)), None)
        return None if legend is None else f"a {shown} line under \"{legend}\": a legend, not a task"
    else:
        return None
    if _pattern(_EXPLAINS).match(rest) or not rest.strip():
        return f"explains the [{label}] marker: a legend line, not a task"
    about = next((s for s in sections if _pattern(_ABOUT_FILE).match(s)), None)
    if about is not None:
        return f"a [{label}] line under \"{about}\": a note about the plan, not a task"
    return None

