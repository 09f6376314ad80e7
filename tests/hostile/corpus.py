"""The hostile-input corpus: bad inputs replayed against the real ``rebasekit`` process.

One case is a small declarative :class:`Case`: a name, a ``setup`` function that builds
its inputs in an empty folder (nothing binary is committed: every input is made by code),
the command line, the exit code the contract promises, a substring the one-line message
must contain, and the user files that must come out byte-identical. :func:`run_case`
runs the CLI as a subprocess (so a crash cannot hide inside a test runner) and returns
an :class:`Outcome` that says which promise, if any, was broken.

Each case runs in its own folder ``work/`` with ``REBASEKIT_CACHE_DIR`` pointing at
``cache/`` beside it: the cache is the one documented place rebasekit writes to besides
the outputs a case names in ``may_change``; any other file created, changed or removed
under the case folder is reported as lost data.

To add cases: write a module ``tests/hostile/cases_<area>.py`` with a ``CASES`` list; every
such module is collected. :mod:`synthetic` (next to this file) builds small plugins and
upstream trees to start from.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# Runs the CLI from the sources on PYTHONPATH (not ``python -m rebasekit``: older trees have
# no __main__), after dropping the import redirection an editable install adds, which would
# otherwise win over PYTHONPATH and run the installed checkout instead.
LAUNCH = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'Redirecting' not in type(f).__name__]; "
    "from rebasekit.cli import app; sys.argv[0] = 'rebasekit'; app(prog_name='rebasekit')"
)
TIMEOUT_S = 120


@dataclass(frozen=True)
class Case:
    """One hostile input and what the contract promises for it."""

    name: str
    # Builds the inputs under the (empty) work folder; may return {"env": {...}}.
    setup: Callable[[Path], object]
    # Arguments after ``rebasekit``; "{work}" (or "{tmp}") is replaced by the work folder.
    argv: list[str]
    # 0 clean, 1 findings, 2 bad input / incomplete, 3 internal error.
    exit_code: int
    # Must appear in stdout+stderr (the problem or the fix, case-insensitive).
    message: str
    # Work-relative files that must stay byte-identical.
    identical: tuple[str, ...] = ()
    # Work-relative files the command may write.
    may_change: tuple[str, ...] = ()
    # Extra environment; "{work}"/"{case}" are replaced.
    env: dict[str, str] = field(default_factory=dict)
    # Work-relative paths that must not exist afterwards (e.g. a planted marker).
    absent: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, record: dict) -> Case:
        """A case written as a plain dict (``name, setup, argv, exit_code, message, unchanged, absent``)."""
        return cls(
            record["name"],
            record["setup"],
            list(record["argv"]),
            record["exit_code"],
            record["message"],
            identical=tuple(record.get("unchanged", ())),
            absent=tuple(record.get("absent", ())),
        )


@dataclass
class Outcome:
    case: Case
    exit_code: int
    output: str
    changed: list[str]  # files changed outside the documented places
    damaged: list[str]  # files of ``identical`` that changed
    # Work-relative path -> digest after the run.
    after: dict[str, str] = field(default_factory=dict)

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.output

    @property
    def message_found(self) -> bool:
        """The message is there, however the console wrapped it."""
        flat = " ".join(self.output.split()).lower()
        return " ".join(self.case.message.split()).lower() in flat

    @property
    def lost_data(self) -> bool:
        return bool(self.changed or self.damaged or self.present)

    @property
    def present(self) -> list[str]:
        return [p for p in self.case.absent if p in self.after]

    @property
    def false_clean(self) -> bool:
        """ "Clean" where findings were due, or a result (0 or 1) where the contract says
        "bad input / incomplete": either way a CI gate passes on an answer that is not true."""
        if self.case.exit_code >= 2:
            return self.exit_code in (0, 1)
        return self.exit_code == 0 and self.case.exit_code == 1

    @property
    def verdict(self) -> str:
        if self.lost_data:
            return "lost data"
        if self.traceback:
            return "traceback"
        if self.false_clean:
            return "false clean"
        if self.exit_code == self.case.exit_code and self.message_found:
            return "clear error" if self.case.exit_code >= 2 else "right result"
        return "wrong answer"

    def problems(self) -> list[str]:
        out = []
        if self.exit_code != self.case.exit_code:
            out.append(f"exit {self.exit_code}, expected {self.case.exit_code}")
        if not self.message_found:
            out.append(f"message {self.case.message!r} not in the output")
        if self.traceback:
            out.append("a traceback was printed")
        if self.changed:
            out.append(f"files changed outside the documented places: {self.changed}")
        if self.damaged:
            out.append(f"user files not byte-identical: {self.damaged}")
        if self.present:
            out.append(f"paths that must not exist were created: {self.present}")
        return out


def case_modules() -> list[str]:
    """Every ``cases_*.py`` next to this file (importable: this folder is on sys.path)."""
    return sorted(p.stem for p in HERE.glob("cases_*.py"))


def all_cases() -> list[Case]:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    cases: list[Case] = []
    for name in case_modules():
        cases += [
            c if isinstance(c, Case) else Case.from_record(c)
            for c in importlib.import_module(name).CASES
        ]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def _digests(root: Path, skip: Path) -> dict[str, str]:
    """Digest of every path under ``root``, except what lies inside the cache ``skip``."""
    out = {}
    for path in sorted(root.rglob("*")):
        if skip in path.parents or ".git" in path.relative_to(root).parts:
            continue
        if path.is_symlink() or not path.is_file():
            out[path.relative_to(root).as_posix()] = "link" if path.is_symlink() else "dir"
            continue
        try:
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            out[path.relative_to(root).as_posix()] = "unreadable"
    return out


def run_case(case: Case, folder: Path, rebasekit_root: Path = REPO) -> Outcome:
    """Build ``case`` under ``folder`` and run the CLI on it from ``rebasekit_root``'s sources."""
    work, cache = folder / "work", folder / "cache"
    work.mkdir(parents=True)
    context = case.setup(work)
    extra_env = {**case.env, **(context.get("env", {}) if isinstance(context, dict) else {})}
    subst = {"{work}": str(work), "{tmp}": str(work), "{case}": str(folder)}

    def fill(text: str) -> str:
        for key, value in subst.items():
            text = text.replace(key, value)
        return text

    if "REBASEKIT_CACHE_DIR" in extra_env:
        cache = Path(fill(extra_env["REBASEKIT_CACHE_DIR"])).resolve()
    before = _digests(folder, cache)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("REBASEKIT_", "COLUMNS"))}
    env.update(
        {
            "REBASEKIT_CACHE_DIR": str(cache),
            "PYTHONPATH": str(rebasekit_root),
            "COLUMNS": "100",
            "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    env.update({k: fill(v) for k, v in extra_env.items()})
    try:
        proc = subprocess.run(
            [sys.executable, "-c", LAUNCH, *[fill(a) for a in case.argv]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, output = -9, f"timed out after {TIMEOUT_S} s\n{exc.stdout or ''}{exc.stderr or ''}"
    after = _digests(folder, cache)
    allowed = set(case.may_change)
    cache_key = cache.relative_to(folder).as_posix() if folder in cache.parents else None
    changed = sorted(
        p
        for p in set(before) | set(after)
        if before.get(p) != after.get(p)
        and p.removeprefix("work/") not in allowed
        and not (p == cache_key and after.get(p) == "dir")
    )  # the cache folder itself may appear
    damaged = sorted(p for p in case.identical if before.get(f"work/{p}") != after.get(f"work/{p}"))
    work_after = {k.removeprefix("work/"): v for k, v in after.items() if k.startswith("work/")}
    return Outcome(case, code, output, changed, damaged, work_after)
