"""The one door agent-loop's jj commands go through (one environment, one timeout, one error
text), and what the jj backend says to jj: the global options, the revision template and its
record, exact-path filesets, and where the repository is."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Callable, Mapping

from agentloop import proc
from agentloop.errors import ProcessError, ProgramNotFound, VcsError
from agentloop.files.shown import typed
from agentloop.ondemand import dataclass
from agentloop.proc import environ
from agentloop.vcs import folder_gone
from agentloop.vcs.jj.symbols import literal

# No pager, no colour, no editor (descriptions come with -m; `false` fails at once instead).
JJ = ["jj", "--no-pager", "--color=never"]
MAX_NEW_FILE = 1 << 40  # bytes: no file a task writes is too big to be part of its change
# One record per revision: fields split by \t, files by \0, records ended by \x1e.
INFO = ('change_id ++ "\\t" ++ commit_id ++ "\\t" ++ current_working_copy ++ "\\t" ++ empty'
        ' ++ "\\t" ++ description.len() ++ "\\t" ++ parents.map(|p| p.change_id()).join(",")'
        ' ++ "\\t" ++ self.diff().files().map(|f| f.source().path() ++ "\\0" ++ f.path())'
        '.join("\\0") ++ "\\x1e"')


# A `--config` that makes jj name the revisions a command left ("Working copy (@) now at:",
# "Parent commit (@-):") by `INFO` after a marker, so `describe` and `new` say what a `log` after
# them would.
SUMMARY = "\x1f"
SUMMARIES = ["--config", "templates.commit_summary=" + json.dumps('"\\x1f" ++ ' + INFO)]


@dataclass(frozen=True)
class Rev:
    """What `INFO` says about one revision."""

    change_id: str
    commit_id: str
    is_wc: bool
    empty: bool
    described: bool
    parents: tuple[str, ...]
    files: tuple[str, ...]


def parse_info(out: str) -> list[Rev]:
    """The revisions `INFO` records in `out`."""
    revs = []
    for record in filter(None, out.split("\x1e")):
        change_id, commit_id, is_wc, empty, desc_len, parents, files = record.split("\t", 6)
        revs.append(Rev(change_id.strip(), commit_id, is_wc == "true", empty == "true",
                        desc_len != "0", tuple(filter(None, parents.split(","))),
                        tuple(sorted(set(filter(None, files.split("\0")))))))
    return revs


def summaries(stderr: str) -> list[Rev]:
    """The revisions a command run with `SUMMARIES` named; none when its report is not one we
    can read whole (a user's settings may quiet it)."""
    try:
        return [parse_info(part.split("\x1e", 1)[0] + "\x1e")[0]
                for part in stderr.split(SUMMARY)[1:]]
    except (ValueError, IndexError):
        return []


def op_head(root: Path) -> str | None:
    """Which operation the repository of the workspace at `root` is at, read off the one file
    name in its op heads folder (no process); None when that is not one name. In a repository
    colocated with git, git's HEAD is part of it: jj takes in what git did at its next command,
    so a `git reset` is caught before that command is taken for one of ours."""
    repo = root / ".jj" / "repo"
    try:
        if repo.is_file():
            repo = repo.parent / repo.read_text().strip()
        heads = os.listdir(repo / "op_heads" / "heads")
        git_head = (root / ".git" / "HEAD").read_bytes() if (root / ".git").is_dir() else b""
    except OSError:
        return None
    return f"{heads[0]} {git_head.strip().decode(errors='replace')}" if len(heads) == 1 else None


def op_id(root: Path) -> str | None:
    """The id of the operation the repository is at, read off its op heads (op_head, no
    process); None when that is not one name."""
    head = op_head(root)
    return head.split(" ", 1)[0] if head is not None else None


# What jj says when a workspace's files are behind its @, rewritten from another workspace.
STALE = "working copy is stale"
# What jj says when a change id names more than one visible commit (two operations that
# rewrote it at once, merged: agentloop.vcs.jj.lane).
DIVERGENT = "is divergent"
# A jj command that takes longer than this is stuck.
TIMEOUT = 600
# What jj says when a workspace's link to its repository, or the repository, is gone.
GONE = ("InvalidDBRoot", "no longer exists", "No such file or directory", "not a directory")
# What jj says in a workspace that was forgotten (`jj workspace forget`), its folder left.
FORGOTTEN = "doesn't have a working-copy commit"
# What jj says of a git object its repository's git store lacks (a colocated repository whose
# commit a `git gc --prune=now` deleted): a damaged repository, which no command of jj's mends.
MISSING = r"Object ([0-9a-f]{40,64}) of type (\w+) not found"


def environment(author: bool = True) -> dict[str, str]:
    """What every jj command runs with: no editor (descriptions come with -m), a terminal width,
    and, with `author`, an author: jj's own identity, else git's (a change jj makes is never
    authorless)."""
    # jj's output here is never a terminal: without COLUMNS, a `log` asks `tput cols` and
    # `tput lines` for the width, two processes each time, for the 80 columns it falls back to
    # anyway; no template of agent-loop's wraps, so the width never shows in what it reads.
    base = {"COLUMNS": "80", **environ.current(), "JJ_EDITOR": "false"}
    return {**base, **_identity(tuple(sorted(base.items())))} if author else base


# The commands that make no change: read with --ignore-working-copy, so that jj does not
# snapshot your working copy into one either. They need no author, which costs up to four
# processes to find (identity), and `--status` asks one of them alone.
READS = (("log",), ("op", "log"))


def _reads(args: tuple[str, ...]) -> bool:
    """Whether jj `args` make no change (READS), so no author goes with them."""
    return args[:1] == ("--ignore-working-copy",) and any(
        args[1:1 + len(words)] == words for words in READS)


@functools.lru_cache(maxsize=4)
def _identity(environ: tuple[tuple[str, str], ...]) -> dict[str, str]:
    # Asked once per environment.
    return identity(dict(environ))


def identity(env: dict[str, str], cwd: Path | None = None) -> dict[str, str]:
    """JJ_USER and JJ_EMAIL from git's identity, for jj commands where jj has none of its own
    (never an empty author on a task's commit): GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL, as git's
    commits take them first, else git's config; {} when jj's is set or git has none."""
    from agentloop.vcs.git.run import Git

    where = cwd or Path.cwd()
    found: dict[str, str] = {}
    for key, variable, author in (("user.name", "JJ_USER", "GIT_AUTHOR_NAME"),
                                  ("user.email", "JJ_EMAIL", "GIT_AUTHOR_EMAIL")):
        if env.get(variable):
            continue
        # Through the door's own runner, not Jj: Jj's environment is what this works out.
        own = _run(where, ("--ignore-working-copy", "config", "get", key), env, None, TIMEOUT)
        if own.returncode == 0 and own.stdout.strip():
            continue
        # A container's or a CI's only identity: git's commits have an author, so jj's do too.
        if env.get(author, "").strip():
            found[variable] = env[author].strip()
            continue
        try:
            theirs = Git(where).run("config", "--get", key, env=env, codes=None)
        except VcsError:
            continue   # no git to ask: jj says "(no email set)", preflight warns of it
        if theirs.returncode == 0 and theirs.stdout.strip():
            found[variable] = theirs.stdout.strip()
    return found


def failure(root: Path, args: tuple[str, ...], detail: str) -> VcsError:
    """The one error text of a jj command that failed, naming the real cause where it is one a
    user can act on (a workspace or its repository removed from outside)."""
    missing = folder_gone(root)
    if missing is not None:
        return VcsError(missing)
    if any(sign in detail for sign in GONE) and _repo_gone(root):
        return VcsError(f"the jj workspace in {root} lost its repository (removed or moved from "
                        "outside); run agent-loop again to set it up afresh")
    if FORGOTTEN in detail:
        return forgotten(root, args, detail)
    said = damage(detail)
    if said is not None:
        return said
    if STALE in detail:
        # jj's own text names no workspace, and its hint is for a shell standing in it.
        return VcsError(f"`jj {_command(args)}` failed: the {STALE} in {root} (a change it "
                        "stands on was rewritten from another workspace); bring it up to date "
                        f"with `jj -R {typed(root)} workspace update-stale`, then run agent-loop "
                        "again")
    return VcsError(f"`jj {_command(args)}` failed: {detail}")


# How jj describes the operation of `jj workspace forget` (one name, or several).
FORGET = ("forget workspace ", "forget workspaces ")


def forgotten_by(description: str) -> list[str]:
    """The workspaces an operation described so forgot (none: not a forget)."""
    for prefix in sorted(FORGET, key=len, reverse=True):
        if description.startswith(prefix):
            return [n.strip() for n in description[len(prefix):].split(",") if n.strip()]
    return []


def forgotten(root: Path, args: tuple[str, ...], detail: str) -> VcsError:
    """The error of a jj command that met a workspace forgotten (`jj workspace forget`): a
    lane's (a command of your checkout's that names `<lane>@`) or yours. jj's own text names
    the workspace, not what happened to it nor how to undo it: the line names the forget's
    operation and reverts it with --ignore-working-copy, which works from your workspace
    even when that is the one forgotten (a plain jj command there would make it a new
    working-copy change, leaving your old one beside the line)."""
    import re  # only once jj failed

    named = re.search(r"Workspace `?([^`\s]+)`? doesn't", detail)
    workspace = named[1] if named else ""
    found = None
    try:
        log = _run(root, ("-R", str(root), "--ignore-working-copy", "op", "log", "--no-graph",
                          "-n", "200", "-T",
                          'id.short(12) ++ " " ++ description.first_line() ++ "\\n"'),
                   environment(), (0,), TIMEOUT).stdout
        found = next((line.split(" ", 1)[0] for line in log.splitlines()
                      if workspace in forgotten_by(line.partition(" ")[2])), None)
    except VcsError:
        pass
    repair = (f"see and repair it with `jj --ignore-working-copy op revert {found}`, then `jj "
              "log`" if found else "`jj --ignore-working-copy op log` shows that operation, "
              "`jj --ignore-working-copy op revert` of it undoes it")
    return VcsError(f"`jj {_command(args)}` failed: the jj workspace {workspace or root} was "
                    "forgotten (`jj workspace forget`, by an agent or from outside), so jj has "
                    f"no working copy for it ({detail.removeprefix('Error: ')}); {repair}, "
                    "then run agent-loop again")


def damage(detail: str) -> VcsError | None:
    """The one line of a repository whose git store lost an object jj's error text (`detail`)
    names (MISSING): damaged, which no command of jj's mends; None when it names none. Said so
    of a failed command (failure) and of a history that cannot be read (branch_log)."""
    if " not found" not in detail:
        return None
    import re  # only once jj failed

    lost = re.search(MISSING, detail)
    if lost is None:
        return None
    from agentloop.vcs.git.pruned import damaged  # the git store's damage, said as git's

    return damaged([lost[1]], lost[2])


def _command(args: tuple[str, ...]) -> str:
    """The jj command `args` run, past the global options (-R, --config) before it."""
    words = iter(args)
    for word in words:
        if word in ("-R", "--config"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""


def _repo_gone(root: Path) -> bool:
    """Whether the repository a workspace at `root` points to (.jj/repo, a folder, or in a
    workspace of its own a file naming one) is missing."""
    link = root / ".jj" / "repo"
    try:
        if link.is_file():
            return not (link.parent / link.read_text().strip()).is_dir()
    except OSError:
        return True
    return not link.is_dir()


class Jj:
    """jj in one folder, with the `--config` options a backend sets (`config`). `confined`:
    the folder is a workspace of its own (a lane's, inside your checkout) whose every command
    names it with `-R`, as does any command run with a `cwd`: jj then fails ("There is no jj
    repo") where its .jj was removed, where from the folder alone it looks upward and finds
    your checkout around it, whose @ the lane's next `jj new` would take. `gone`: what that
    failure (or jj's own, in a workspace forgotten) raises instead of jj's error (a lane's:
    LaneBreach, which stops its group; given by the backend, so that this runner needs
    nothing of the checks that use it)."""

    def __init__(self, root: Path, config: list[str] | None = None,
                 confined: bool = False,
                 gone: Callable[[Path], Exception] | None = None) -> None:
        self.root = root
        self.config = config or []
        self.confined = confined
        self.gone = gone
        # The operation at which every finished task's change was last seen below @, carried
        # over each command of ours begun there: the history check is skipped while it holds.
        self.sound: str | None = None

    def run(self, *args: str, cwd: Path | None = None, codes: tuple[int, ...] | None = (0,),
            env: Mapping[str, str] | None = None, timeout: float = TIMEOUT) -> proc.Completed:
        """Run one jj command; VcsError for an exit code not in `codes` (None: any exit code
        is an answer). `env`: variables set on top of the one environment."""
        ours = self.sound is not None and cwd is None and op_head(self.root) == self.sound
        self.sound = None  # a command that fails may have done part of its work
        full = {**environment(not _reads(args)), **(env or {})}
        where = cwd or self.root
        named = ("-R", str(where)) if self.confined or cwd is not None else ()
        try:
            done = _run(where, (*named, *self.config, *args), full, codes, timeout)
        except VcsError as exc:
            if self.gone is not None and where.is_dir() and (
                    not (where / ".jj").is_dir() or FORGOTTEN in str(exc)):
                raise self.gone(where) from None
            raise
        if ours:
            self.sound = op_head(self.root)
        return done

    def out(self, *args: str, cwd: Path | None = None, codes: tuple[int, ...] | None = (0,)
            ) -> str:
        """A jj command's standard output."""
        return self.run(*args, cwd=cwd, codes=codes).stdout

    def revs(self, revset: str, *options: str) -> list[Rev]:
        """The revisions in `revset` as INFO reads them, newest first (`options`: jj's global
        ones, such as `--ignore-working-copy`)."""
        return parse_info(self.out(*options, "log", "--no-graph", "-r", revset, "-T", INFO))

    def told(self, *args: str) -> list[Rev]:
        """Run a jj command that rewrites or moves @; the revisions it said it left."""
        return summaries(self.run(*SUMMARIES, *args).stderr)

    def ids(self, revset: str, template: str = "change_id") -> list[str]:
        """The change ids (or `template`) of the revisions in `revset`, newest first."""
        out = self.out("log", "--no-graph", "-r", revset, "-T", template + ' ++ "\\n"')
        return out.split()

    def description(self, rev: str) -> str:
        """The description of revision `rev`, as jj keeps it (ending in a newline)."""
        return self.out("log", "--no-graph", "-r", rev, "-T", "description")

    def files(self, revset: str) -> set[str]:
        """The paths the revisions in `revset` change."""
        return set(self.out("diff", "-r", revset, "--name-only").split())


def _run(where: Path, args: tuple[str, ...], env: Mapping[str, str],
         codes: tuple[int, ...] | None, timeout: float) -> proc.Completed:
    """The one place a jj command starts: one error text for every way it can fail."""
    if not where.is_dir():
        raise failure(where, args, "")
    try:
        done = proc.run([*JJ, *args], cwd=where, env=dict(env), check=False, timeout=timeout)
    except ProgramNotFound as exc:
        raise VcsError("jj is not installed or not on PATH") from exc
    except ProcessError as exc:
        raise failure(where, args, str(exc)) from None
    if codes is not None and done.returncode not in codes:
        raise failure(where, args, (done.stderr or done.stdout).strip())
    return done


def jj_root(folder: Path) -> Path | None:
    """The jj repository holding `folder`, or None; raises ProgramNotFound without jj."""
    done = proc.run([*JJ, "--ignore-working-copy", "root"], cwd=folder, env=environment(),
                    check=False, timeout=TIMEOUT)
    return Path(done.stdout.strip()) if done.returncode == 0 else None


def fileset(paths: list[str]) -> str:
    """Exact paths as a jj fileset, so no file name is read as a pattern."""
    return " | ".join(f"root-file:{literal(p)}" for p in paths)
