"""The suite source a run used: the working tree's, or the one of the revision it recorded.

Why: a reproduction script shows the test that produced a cell. A results file recorded at
another revision of the suites (an older run kept in ``reports/results/``, a framework's CI
that pinned an older release) must get that revision's test, not the one checked out today.

A run's header records ``suite_revision`` (the git commit of the suites, None outside git),
``suite_dirty`` (the suites differed from that commit) and ``suite_digest`` (a hash of the
source files below, as the run read them). :func:`tree_for` finds the source:

1. the working tree (or installed package) when its digest equals the recorded one;
2. else ``git show <suite_revision>:<path>`` in the checkout, when git has that commit and
   the run was not dirty (and, when a digest was recorded, what git shows hashes to it);
3. else :class:`SourceUnavailable`, saying which revision is needed and how to get it.

A header without ``suite_digest`` (results written before it existed) goes straight to 2.

The harness itself (adapters, classification, ``conformance.api``) is not part of this
source: a script imports it from the installed package (:mod:`conformance.repro.runtime`), as
it imports the suites' helper modules where the run's revision has them as installed
(:mod:`conformance.repro.derive`). :mod:`conformance.model.suite_index` reads the tests of a tree.
Standard library only (the harness imports :func:`digest` to write the header).
"""
from __future__ import annotations

import functools
import hashlib
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The suites directory, relative to the root (every ``*.py`` in it is suite source).
SUITES = "conformance/suites"
#: Further files the suite digest covers: the suites' liveness checks, so that a run whose
#: liveness checks differ from this checkout's is not taken for it (scripts import them).
HELPERS = ("conformance/liveness.py",)
_COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")


class SourceUnavailable(Exception):
    """The suite source a run recorded cannot be found; the message says what to do."""


class Tree:
    """Read-only view of the source files: ``read(relpath)`` and ``suite_files()``."""

    key: tuple = ()

    def read(self, relpath: str) -> str:
        raise NotImplementedError

    def suite_files(self) -> list[str]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def digest(self) -> str:
        return _digest_of(self)


class WorkingTree(Tree):
    """The files on disk under ``root`` (a checkout, or the installed package's parent)."""

    def __init__(self, root: Path = ROOT, suites: Path | None = None) -> None:
        self.root = Path(root).resolve()
        #: the suites directory: ``<root>/conformance/suites``, or another one a pytest run
        #: collects (its files are then named by absolute path)
        self.suites = Path(suites).resolve() if suites is not None else self.root / SUITES
        self._prefix = (SUITES if suites is None else self.suites.as_posix())
        stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size)
                      for p in sorted(self.suites.glob("*.py")))
        self.key = ("work", str(self.root), str(self.suites), stamp)

    def read(self, relpath: str) -> str:
        return (self.root / relpath).read_text(encoding="utf-8")

    def suite_files(self) -> list[str]:
        return [f"{self._prefix}/{p.name}" for p in sorted(self.suites.glob("*.py"))]

    def describe(self) -> str:
        return "the working tree"


class GitTree(Tree):
    """The files of commit ``revision`` in the git repository at ``root``."""

    def __init__(self, root: Path, revision: str) -> None:
        self.root = Path(root).resolve()
        self.revision = revision
        self.key = ("git", str(self.root), revision)

    def read(self, relpath: str) -> str:
        return _git_show(str(self.root), self.revision, relpath)

    def suite_files(self) -> list[str]:
        listing = _git(str(self.root), "ls-tree", "--name-only", f"{self.revision}:{SUITES}")
        return [f"{SUITES}/{name}" for name in sorted(listing.split()) if name.endswith(".py")]

    def describe(self) -> str:
        return f"git revision {self.revision[:12]}"


def digest(root: Path = ROOT) -> str:
    """The hash of the suite source under ``root`` (what a run header records)."""
    return WorkingTree(root).digest()


def _digest_of(tree: Tree) -> str:
    h = hashlib.sha256()
    for relpath in [*tree.suite_files(), *HELPERS]:
        try:
            text = tree.read(relpath)
        except (OSError, SourceUnavailable):
            text = ""
        h.update(relpath.encode() + b"\0" + text.encode("utf-8") + b"\0")
    return "sha256:" + h.hexdigest()[:20]


@functools.lru_cache(maxsize=256)
def _git_show(root: str, revision: str, relpath: str) -> str:
    return _git(root, "show", f"{revision}:{relpath}")


def _git(root: str, *args: str) -> str:
    try:
        # a limit on a hang only: git show takes well under a second, so 600 s is a hang on
        # any machine however busy (the declared model imports nothing above it, so not
        # conformance/time_scale.py)
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                              timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SourceUnavailable(f"git {' '.join(args[:2])}: {exc}") from None
    if done.returncode != 0:
        raise SourceUnavailable(f"git {' '.join(args)}: {done.stderr.strip()[:200]}")
    return done.stdout


def has_revision(root: Path, revision: str) -> bool:
    try:
        _git(str(Path(root).resolve()), "cat-file", "-e", f"{revision}^{{commit}}")
    except SourceUnavailable:
        return False
    return True


def tree_for(header, root: Path = ROOT) -> Tree:
    """The source tree of the run whose results header is ``header`` (a
    :class:`conformance.results.RunHeader`, or its JSON; see the module doc)."""
    from conformance.results.records import RunHeader

    if not isinstance(header, RunHeader):
        header = RunHeader.from_json(header, "the run's header")
    work = WorkingTree(root)
    recorded = header.suite_digest
    revision = header.suite_revision
    if recorded and recorded == work.digest():
        return work
    if not recorded and not revision:
        return work  # nothing recorded to compare with (a hand-made results file)
    where = (f"suite revision {str(revision)[:12]}" if revision else "no git revision") + \
        (f" (digest {recorded})" if recorded else "") + \
        (", with uncommitted changes" if header.suite_dirty else "")
    if revision and not _COMMIT.fullmatch(str(revision)):
        # a results file is data: its revision reaches git only as a commit id, never as an option
        raise SourceUnavailable(f"the run's suite_revision {str(revision)[:60]!r} is not a git "
                                f"commit id; run the suites again")
    if not revision:
        raise SourceUnavailable(
            f"the run used suites of {where}, which differ from this checkout's "
            f"({work.digest()}): generate its scripts from a checkout with those suites, or "
            f"run the suites again")
    if header.suite_dirty:
        if not recorded:
            return work if revision == _head(root) else _unavailable(where, work, dirty=True)
        _unavailable(where, work, dirty=True)
    if not has_revision(root, revision):
        _unavailable(where, work)
    tree = GitTree(root, revision)
    if recorded and tree.digest() != recorded:
        raise SourceUnavailable(f"the run used suites of {where}, but git shows different "
                                f"suites at that revision ({tree.digest()})")
    return tree


def _head(root: Path) -> str | None:
    try:
        return _git(str(Path(root).resolve()), "rev-parse", "HEAD").strip()
    except SourceUnavailable:
        return None


def _unavailable(where: str, work: Tree, dirty: bool = False):
    why = ("the run's suites had uncommitted changes, which git does not keep" if dirty else
           "git has no such commit here (a shallow clone, or another repository: "
           "git fetch --unshallow, or fetch that commit)")
    raise SourceUnavailable(f"the run used suites of {where}; this checkout has other suites "
                            f"({work.digest()}) and {why}; check out that revision to "
                            f"generate its scripts, or run the suites again")
