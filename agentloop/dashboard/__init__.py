"""The dashboard: a page in the browser that follows a run (--serve), the same page as one file
(--report), and word sent when a run needs a person (the `notify` setting).

It only reads: a plan's state and its `events.jsonl` (`sources`), a task's log a page at a time
(`logs`), a landed change's diff (`diffs`); the one thing it writes is the stop request
`--stop-after-running` writes (`controls`). The web libraries are imported by `server` and
`serve` alone, and only when --serve asks for them; `notify` imports apprise only when it sends.
"""
