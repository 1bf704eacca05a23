"""One agent run's policy, read from the files themselves: the working copy, what its VCS
writes for it, the agent's home folders, and the secrets no agent sees.

No VCS program is run to find these: a git worktree names its git folder in its `.git` file,
that folder names the shared one in `commondir`; a jj workspace names its repository in
`.jj/repo` (a file in a secondary workspace), and a repository kept in git names that folder in
`store/git_target`. Reading them costs microseconds; a `git rev-parse` per agent run would not.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable, Optional, Sequence, Tuple

from agentloop.ondemand import dataclass


@dataclass(frozen=True)
class Policy:
    """What one confined run may touch. Later entries win where paths nest: `writable` folders
    are opened in a read-only system, `protected` ones closed again inside them, `hidden` ones
    emptied last."""

    workdir: Path
    writable: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()


# Under the home folder: what an injected prompt would be after first.
SECRETS = ("~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.netrc", "~/.docker/config.json",
           "~/.kube", "~/.git-credentials", "~/.config/gcloud", "~/.azure", "~/.pypirc",
           "~/.npmrc")
# What git writes for a commit, a ref or a reflog. Never config or hooks: agent-loop's own git,
# outside the sandbox, would read and run them.
GIT_WRITES = ("objects", "refs", "logs")


def _real(path: Path) -> Path:
    return Path(path).expanduser().resolve()


def _read_link_file(path: Path, prefix: str = "") -> Path | None:
    """The folder a one-line pointer file names (relative to the file's folder), or None."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if prefix:
        if not text.startswith(prefix):
            return None
        text = text[len(prefix):].strip()
    target = Path(text)
    return _real(target if target.is_absolute() else path.parent / target)


def git_needs(workdir: Path) -> tuple[list[Path], list[Path]]:
    """(writable, protected) for a git working copy: a worktree's own git folder and the shared
    objects, refs and logs, not its `.git` file; a main checkout's `.git` comes with it, less
    config and hooks.

    Every folder on the way to a protected file is a mount of its own (writable, bound onto
    itself), as a lane's own git folder is: a mount cannot be moved, so the agent cannot move
    `.git` (or `.git/modules`) away, protected files and all, and put a copy with a config of
    its own in its place."""
    dot = workdir / ".git"
    if dot.is_dir():
        held, protected = _submodule_configs(dot / "modules")
        return [dot, *held], [*_git_config(dot, dot), *protected]
    own = _read_link_file(dot, "gitdir:") if dot.is_file() else None
    if own is None:
        return [], []
    common = _read_link_file(own / "commondir") or own
    # The `.git` file too: pointed at a git folder of the agent's own, it would hand that
    # folder's config to agent-loop's git in the lane.
    return [own, *(common / name for name in GIT_WRITES)], [dot, *_git_config(own, common)]


def _git_config(own: Path, common: Path) -> list[Path]:
    """What git reads as configuration (or runs) for the worktree whose git folder is `own`:
    the shared config and hooks, and its own `config.worktree` where the repository turned
    `extensions.worktreeConfig` on. That file is made empty here, outside, when missing: a
    file the agent could make there would hold settings agent-loop's own git reads (a filter
    it runs as the user), and a missing path cannot be held read-only."""
    found = [common / "config", common / "hooks"]
    try:
        extended = "worktreeconfig" in (common / "config").read_text(errors="replace").lower()
    except OSError:
        extended = False
    if extended:
        worktree = own / "config.worktree"
        try:
            worktree.touch(exist_ok=True)
        except OSError:
            pass
        found.append(worktree)
    return found


def _submodule_configs(modules: Path) -> tuple[list[Path], list[Path]]:
    """(the folders to hold in place, the files to protect) for every submodule's git folder
    under `.git/modules`, nested ones too: agent-loop's `git status` runs git in each
    submodule, which reads their config."""
    try:
        folders = [p for p in modules.iterdir() if p.is_dir()]
    except OSError:
        return [], []
    held, protected = [modules], []
    for folder in folders:   # a name may hold slashes: a git folder is where HEAD is
        if (folder / "HEAD").is_file() and (folder / "config").is_file():
            inner = _submodule_configs(folder / "modules")
            held += [folder, *inner[0]]
            protected += [*_git_config(folder, folder), *inner[1]]
        else:
            inner = _submodule_configs(folder)
            held += inner[0]
            protected += inner[1]
    return held, protected


def _jj_repo(workdir: Path) -> Path | None:
    """The repository folder of the jj workspace `workdir` (a secondary one's `.jj/repo` file
    names it)."""
    repo = workdir / ".jj" / "repo"
    if repo.is_file():
        found = _read_link_file(repo)
        if found is None:
            return None
        repo = found
    return repo if repo.is_dir() else None


def jj_needs(workdir: Path) -> list[Path]:
    """What jj writes for a workspace: the repository (store, operation log, index) and the git
    objects and refs of a repository kept in git."""
    repo = _jj_repo(workdir)
    if repo is None:
        return []
    needs = [_real(repo)]
    git = _read_link_file(repo / "store" / "git_target")
    if git is not None and git.is_dir():
        needs += [git / name for name in GIT_WRITES]
    return needs


def jj_held(workdir: Path) -> list[Path]:
    """What of the jj repository stays read-only: its `config-id`, which names its per-repo
    config in your config folder. A repository without one takes a `.jj/repo/config.toml` as
    its old per-repo config and moves it there (a signing program set in it runs as you on
    the next commit jj writes), so one is made here, outside, when missing: jj then reads no
    config.toml there. Where you have such an old config.toml of your own, it is held instead."""
    repo = _jj_repo(workdir)
    if repo is None:
        return []
    config_id, legacy = repo / "config-id", repo / "config.toml"
    if not config_id.exists():
        if legacy.exists():
            return [_real(legacy)]
        import secrets

        try:  # as jj makes one: 20 hex digits; jj makes the folder it names on first use
            with config_id.open("x", encoding="utf-8") as handle:
                handle.write(secrets.token_hex(10))
        except OSError:
            return []
    return [_real(config_id)]


def env_files(folders: Iterable[Path], inside: Path) -> list[Path]:
    """The `.env*` files at the top of these folders, but for those in the working copy."""
    found = []
    for folder in folders:
        try:
            entries = list(folder.glob(".env*"))
        except OSError:
            continue
        found += [p for p in entries if not _within(_real(p), inside)]
    return found


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


# The folders the sandbox replaces with empty private ones (bubblewrap's SYSTEM mounts).
PRIVATE = (Path("/tmp"), Path("/var/tmp"))


def program_needs(program: str, private: Sequence[Path] = PRIVATE) -> list[Path]:
    """What must stay readable for `program` to start where the private /tmp would hide it: an
    agent installed under /tmp (a checkout in a temporary folder, its node_modules), or a
    script whose interpreter lives there (a virtual environment). Read-only, nothing else of
    /tmp: the folder it was installed into (node_modules, a virtual environment), else its own
    folder."""
    found = shutil.which(program)
    if found is None:
        return []
    paths = [Path(found)]
    interpreter = _interpreter(Path(found))
    if interpreter is not None:
        paths.append(interpreter)
    needs: list[Path] = []
    for path in paths:
        for candidate in (path.absolute(), _real(path)):
            if any(_within(candidate, _real(folder)) or _within(candidate, folder)
                   for folder in private):
                folder = _installed_in(candidate)
                if folder not in needs:
                    needs.append(folder)
    return needs


def _interpreter(script: Path) -> Path | None:
    """The program a `#!` line names (`env NAME` looked up on PATH), or None."""
    try:
        with script.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        located = shutil.which(names[0]) if names else None
        return Path(located) if located else None
    return Path(words[0])


def _installed_in(path: Path) -> Path:
    for folder in path.parents:
        if folder.name == "node_modules" or (folder / "pyvenv.cfg").is_file():
            return folder
    return path.parent


# A path in an agent's home its program reads later, outside any sandbox, as configuration or
# runs (hooks): with the text a missing file is made with outside (None: a folder).
Kept = Tuple[Path, Optional[str]]


def policy_for(repo: Path, state_dir: Path, home_dir: Path, hide: Sequence[str], workdir: Path,
               homes: Sequence[Path], writes: bool, program: str | None = None,
               kept: Sequence[Kept] = ()) -> Policy:
    """The policy of one agent run of `program` in `workdir`, in repository `repo` whose
    `state_dir` no agent writes; `hide`: the user's extra hidden paths (~ for `home_dir`);
    `kept`: the paths in the agent's homes that stay read-only."""
    work, root, home = _real(workdir), _real(repo), _real(home_dir)
    writable: list[Path] = []
    # The repository, the home folder and the program stay readable, even where the private
    # /tmp would cover them (a repository under /tmp): read-only, the working copy open inside
    # (itself read-only too where the run does not write: the reviewer, a helper call).
    protected: list[Path] = [_real(state_dir),
                             *(p for p in (root, home) if p != work or not writes),
                             *(program_needs(program) if program else ())]
    if writes:
        git_writable, git_protected = git_needs(work)
        writable += [work, *git_writable, *jj_needs(work)]
        protected += [*git_protected, *jj_held(work)]
    for folder in homes:
        folder = _real(folder)
        folder.mkdir(parents=True, exist_ok=True)  # a first run makes it: made here, outside
        writable.append(folder)
    # Where the home folder itself is a link (~/.claude into the user's dotfiles), its paths are
    # bound where it leads, as the folder is.
    held = (_held(_real(path.parent) / path.name, text) for path, text in kept)
    protected += [path for path in held if path]
    hidden = [Path(p.replace("~", str(home), 1)) if p.startswith("~") else Path(p)
              for p in (*SECRETS, *hide)]
    hidden += env_files({root, home}, work)
    return Policy(work, tuple(_exists(writable)), tuple(_exists(protected)),
                  tuple(_exists(_real(p) if p.is_absolute() else _real(root / p)
                                for p in hidden)))


def _held(path: Path, text: str | None) -> Path | None:
    """What to bind read-only for the kept `path`, made here, outside, when missing (a missing
    path cannot be bound, and the agent could create it: a settings file with a hook that the
    user's own unsandboxed CLI would run tomorrow); None when it cannot be made.

    A symbolic link (a settings file kept with the user's dotfiles) is held at its target:
    bubblewrap refuses a link as a mount point. The link itself stays replaceable there."""
    if path.is_symlink():
        target = _real(path)
        return target if target.exists() else None
    if path.exists():
        return path
    try:
        if text is None:
            path.mkdir(parents=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("x", encoding="utf-8") as handle:
                handle.write(text)
    except OSError:
        return None
    return path


def _exists(paths: Iterable[Path]) -> list[Path]:
    seen: list[Path] = []
    for path in paths:
        if path not in seen and (path.exists() or path.is_symlink()):
            seen.append(path)
    return seen
