"""git, and jj through its git store: the branches a fleet job pushes and an integrating clone
fetches (`agent-loop --group G --push REMOTE`, `agent-loop --integrate --from REMOTE`).

A group's work is on branch `agent-loop/<plan>/<lane>`, each task a commit (or jj change) of its
own. Its state travels beside it on branch `agent-loop/state/<plan>/<lane>`: commits holding
`state.json` (and the agent's learnings), one per push, each on the one before. Branches, not
notes or side refs, because `jj git push` pushes bookmarks only: a branch of its own works in
both, and a plain fetch brings both back. Logs and agent transcripts stay out: they hold whatever the agent read.

Fetching goes through git in both modes (a jj repository is colocated, or has its git store):
jj's own fetch needs git 2.41, and git's fetch followed by `jj git import` is the same.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.files.shown import typed
from agentloop.ondemand import dataclass
from agentloop.vcs.git.run import Git
from agentloop.vcs.trailers import task_lines

STATE_FILE = "state.json"


@dataclass(frozen=True)
class Repo:
    """A clone, as git sees it: its root, its kind (git or jj) and its git directory."""

    root: Path
    kind: str
    git_dir: Path

    def git(self, *args: str, codes: tuple[int, ...] = (0,), input: str | None = None,
            env: dict[str, str] | None = None) -> tuple[int, str]:
        """(exit code, stdout) of one git command; VcsError for any other exit."""
        return Git(self.root, self.git_dir).code(*args, codes=codes, input=input, env=env)

    def jj(self, *args: str, codes: tuple[int, ...] = (0,)) -> tuple[int, str]:
        """(exit code, stdout) of one jj command."""
        from agentloop.vcs.jj.run import Jj  # jj's runner only for a jj clone

        done = Jj(self.root).run(*args, codes=codes)
        return done.returncode, done.stdout


def open_repo(root: Path) -> Repo:
    """The clone at `root`: jj when it has `.jj/`, else git; VcsError when it is neither."""
    if (root / ".jj").is_dir():
        from agentloop.vcs.jj.run import Jj

        out = Jj(root).out("git", "root")
        return Repo(root, "jj", Path(out.strip()))
    code, out = Git(root).code("rev-parse", "--absolute-git-dir", codes=(0, 128))
    if code:
        raise VcsError(f"{root} is not a git or jj repository: run in a clone of the project")
    return Repo(root, "git", Path(out.strip()))


def plan_slug(task_file_name: str) -> str:
    """The plan's part of a branch name: `docs/plan.md` -> `docs-plan`."""
    stem = task_file_name[:-3] if task_file_name.lower().endswith(".md") else task_file_name
    slug = re.sub(r"[^a-z0-9]+", "-", stem.casefold()).strip("-") or "plan"
    return f"{slug}-plan" if slug == "state" else slug  # `state` is the states' own folder


def work_branch(plan: str, lane: str) -> str:
    """Where a group's tasks are, one commit or change each."""
    return f"agent-loop/{plan}/{lane}"


def state_branch(plan: str, lane: str) -> str:
    """Where a group's state.json travels."""
    return f"agent-loop/state/{plan}/{lane}"


def refuse_shallow(repo: Repo) -> None:
    """A shallow clone (CI's default checkout) has no history to build tasks on or to merge."""
    out = repo.git("rev-parse", "--is-shallow-repository")[1].strip()
    if out == "true":
        raise VcsError(f"{repo.root} is a shallow clone (a CI checkout fetches one commit by "
                       "default): agent-loop needs the full history to resume and integrate "
                       "groups; check out with full history (GitHub Actions: actions/checkout "
                       "with `fetch-depth: 0`) or run `git fetch --unshallow` first")


def check_remote(repo: Repo, remote: str) -> None:
    """`remote` must be one of the clone's remotes, by name."""
    names = repo.git("remote")[1].split()
    if remote not in names:
        listed = ", ".join(names) or "none"
        raise VcsError(f"there is no remote named {remote!r} in {repo.root} (remotes: "
                       f"{listed}); add it with `git remote add {typed(remote)} URL`")


def fetch(repo: Repo, remote: str) -> None:
    """Every agent-loop branch of `remote`, as remote-tracking branches (jj: remote bookmarks)."""
    repo.git("fetch", "-q", "--no-tags", "--prune", remote,
             f"+refs/heads/agent-loop/*:refs/remotes/{remote}/agent-loop/*")
    if repo.kind == "jj":
        repo.jj("git", "import")


def tip(repo: Repo, ref: str) -> str | None:
    """The commit `ref` names, or None when there is no such ref."""
    code, out = repo.git("rev-parse", "--verify", "-q", ref + "^{commit}", codes=(0, 1))
    return out.strip() if code == 0 else None


def remote_branches(repo: Repo, remote: str, prefix: str) -> dict[str, str]:
    """{branch: commit} of the fetched branches of `remote` under `prefix`."""
    base = f"refs/remotes/{remote}/"
    out = repo.git("for-each-ref", "--format=%(objectname) %(refname)", base + prefix)[1]
    return {ref[len(base):]: sha for sha, ref in (line.split(" ", 1) for line in out.splitlines())}


def read_file(repo: Repo, commit: str, path: str) -> str | None:
    """A file's text at `commit`, or None when it has none."""
    code, out = repo.git("cat-file", "blob", f"{commit}:{path}", codes=(0, 128))
    return out if code == 0 else None


def is_ancestor(repo: Repo, old: str, new: str) -> bool:
    """Whether `old` is in `new`'s history."""
    return repo.git("merge-base", "--is-ancestor", old, new, codes=(0, 1))[0] == 0


def record(repo: Repo, branch: str, files: dict[str, str], message: str,
           parent: str | None) -> str:
    """A commit holding `files` alone on `parent`, branch `branch` moved to it; its sha."""
    entries = []
    for name, text in sorted(files.items()):
        blob = repo.git("hash-object", "-w", "--stdin", input=text)[1].strip()
        entries.append(f"100644 blob {blob}\t{name}\n")
    tree = repo.git("mktree", input="".join(entries))[1].strip()
    argv = ["commit-tree", tree, *(["-p", parent] if parent else [])]
    sha = repo.git(*argv, input=message + "\n")[1].strip()
    repo.git("update-ref", f"refs/heads/{branch}", sha)
    return sha


def push(repo: Repo, remote: str, branches: list[str]) -> None:
    """Push these local branches to `remote` together (jj: as bookmarks, by `jj git push`)."""
    if repo.kind == "jj":
        repo.jj("git", "import")
        for branch in branches:
            # A bookmark the remote has already (a resumed job) must be tracked to move it.
            if tip(repo, f"refs/remotes/{remote}/{branch}") is not None:
                repo.jj("bookmark", "track", f"{branch}@{remote}", codes=(0, 1))
        # The run's base change (the clone's empty working copy, under the first task until
        # the run ends and drops it) is pushed as it is: no task's change is empty.
        bookmarks = [arg for branch in branches for arg in ("--bookmark", f"exact:{branch}")]
        repo.jj("git", "push", "--remote", remote, "--allow-empty-description", *bookmarks)
        return
    repo.git("push", "-q", "--atomic", remote,
             *(f"refs/heads/{b}:refs/heads/{b}" for b in branches))


TRAILER = "Agent-Loop-Source"


def task_trailers(plan: str, index: int) -> str:
    """The trailers that name a task on a job's commit: its plan and its number."""
    return task_lines(plan, str(index))


def with_trailer(repo: Repo, commit: str, lines: list[str]) -> str:
    """`commit` again (same tree, parent, author and date) with `lines` as trailers at the end of
    its message: what `--integrate` lands, so the main line says which job commit each is."""
    raw = repo.git("cat-file", "commit", commit)[1]
    head, _, message = raw.partition("\n\n")
    fields = head.splitlines()
    tree = next(line.split()[1] for line in fields if line.startswith("tree "))
    parents = [line.split()[1] for line in fields if line.startswith("parent ")]
    author = next(line for line in fields if line.startswith("author "))
    who, _, when = author[len("author "):].rpartition("> ")
    name, _, email = who.partition(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when,
           "GIT_COMMITTER_DATE": when}
    body = message.rstrip("\n")
    last = body.rsplit("\n\n", 1)[-1]
    # Trailers the job's commit has already are kept, and the new ones join their block.
    lines = [line for line in lines if line not in last.splitlines()]
    joined = "\n" if last.startswith("Agent-Loop-") else "\n\n"
    text = body + joined + "\n".join(lines) + "\n"
    argv = ["commit-tree", tree, *(a for p in parents for a in ("-p", p))]
    return repo.git(*argv, input=text, env=env)[1].strip()


def sources(repo: Repo, ref: str) -> dict[str, str]:
    """{job commit: the main line's commit} for every commit on `ref` that names its source."""
    out = repo.git("log", "--format=%H%x00%(trailers:key=" + TRAILER + ",valueonly,"
                   "separator=%x01)%x02", ref)[1]
    found: dict[str, str] = {}
    for entry in out.split("\x02"):
        sha, _, values = entry.strip("\n").partition("\x00")
        for value in values.split("\x01"):
            if value.strip() and sha.strip():
                found.setdefault(value.strip(), sha.strip())
    return found
