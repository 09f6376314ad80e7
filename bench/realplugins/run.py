"""rebasekit on real vLLM plugins from the package registry, every command, one table.

    python bench/realplugins/run.py [--only arctic-inference==0.0.9 ...] [--out DIR]

For each release (arctic-inference 0.0.9, 0.1.0, 0.1.1, 0.1.2; vllm-ascend 0.18.0, 0.23.0)
the plugin sdist and the vLLM release it pins are fetched once (``fetch.py``; cached outside
the repository), then every rebasekit command runs as a user would run it from the
plugin's project root, as a subprocess so a crash is seen as a crash:

* ``scan`` at the release's own pin, with no configuration and (arctic-inference) with
  ``--patch-base ArcticPatch``; findings counted by code and severity from ``--json``;
* ``scan --from OLD_PIN --to NEW_PIN`` of the older plugin release of each consecutive
  arctic-inference pair;
* ``scan-imports``, ``scan-signatures``, ``corpus show``, ``diff-method`` (one method the
  plugin patches), ``runbook``; ``compare-pins --history`` over a git repository holding
  one commit per release, for each project with more than one release.

A command that prints a traceback or exits 3 is a bug and is marked so in the table.
Results go to ``bench/realplugins/RESULTS.md`` and ``results.json`` beside it.
arctic-inference 0.2.0 and 0.3.0 are held out of this evaluation and never fetched.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import fetch  # noqa: E402

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Release:
    project: str
    version: str
    package: str  # import name of the plugin package
    patch_base: str | None  # the base its patch classes derive from, when it has one
    patched_method: str  # one upstream method the release patches, for diff-method

    @property
    def label(self) -> str:
        return f"{self.project} {self.version}"


ARCTIC_METHOD = "vllm.v1.worker.gpu_model_runner.GPUModelRunner.execute_model"
ASCEND_METHOD = "vllm.v1.worker.gpu_model_runner.GPUModelRunner._dummy_run"
RELEASES = [
    Release("arctic-inference", "0.0.9", "arctic_inference", "ArcticPatch", ARCTIC_METHOD),
    Release("arctic-inference", "0.1.0", "arctic_inference", "ArcticPatch", ARCTIC_METHOD),
    Release("arctic-inference", "0.1.1", "arctic_inference", "ArcticPatch", ARCTIC_METHOD),
    Release("arctic-inference", "0.1.2", "arctic_inference", "ArcticPatch", ARCTIC_METHOD),
    Release("vllm-ascend", "0.18.0", "vllm_ascend", None, ASCEND_METHOD),
    Release("vllm-ascend", "0.23.0", "vllm_ascend", None, ASCEND_METHOD),
]


@dataclass
class Run:
    command: str
    release: str
    args: list[str]
    exit_code: int
    seconds: float
    traceback: bool
    report: dict | None = None
    stderr_tail: str = ""

    @property
    def bug(self) -> bool:
        return self.traceback or self.exit_code == 3

    def to_json(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "report"}
        out["bug"] = self.bug
        if self.report is not None:
            out["summary"] = summarise(self.report)
        return out


def summarise(report: dict) -> dict:
    """Counts from a scan's JSON report: by severity, by code (with severity), degradations."""
    by_code: collections.Counter[str] = collections.Counter()
    by_drift: collections.Counter[str] = collections.Counter()
    for f in report.get("findings", []):
        by_code[f"{f['code']}:{f['severity']}"] += 1
        by_drift[f.get("drift", "unknown")] += 1
    return {
        "findings": len(report.get("findings", [])),
        "by_severity": dict(report.get("summary", {}).get("by_severity", {})),
        "by_code": dict(sorted(by_code.items())),
        "by_drift": dict(sorted(by_drift.items())),
        "complete": report.get("complete"),
        "degradations": [d.get("kind") for d in report.get("degradations", [])],
        "patches": report.get("summary", {}).get("patches", {}).get("by_rule", {}),
    }


# Set by --rebasekit-src: run rebasekit from that source folder (e.g. an older commit's
# ``git archive``) instead of the installed one. Editable installs put a meta-path finder
# ahead of sys.path, so it is dropped before the import.
_SOURCE_RUNNER = (
    "import runpy, sys; "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'Redirecting' not in type(f).__name__ "
    "and 'Editable' not in type(f).__name__]; "
    "sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'rebasekit'; "
    "runpy.run_module('rebasekit', run_name='__main__')"
)
REBASEKIT_SRC: Path | None = None


def _command() -> list[str]:
    if REBASEKIT_SRC is None:
        return [sys.executable, "-m", "rebasekit"]
    return [sys.executable, "-c", _SOURCE_RUNNER, str(REBASEKIT_SRC)]


def rebasekit(command: str, release: str, args: list[str], cwd: Path, *, parse: bool) -> Run:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("REBASEKIT_DEBUG", None)
    start = time.perf_counter()
    done = subprocess.run(
        [*_command(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    combined = done.stdout + done.stderr
    report = None
    if parse and done.returncode in (0, 1, 2):
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            report = None
    run = Run(
        command,
        release,
        args,
        done.returncode,
        round(seconds, 2),
        "Traceback (most recent call last)" in combined,
        report,
        done.stderr.strip()[-400:],
    )
    mark = "BUG" if run.bug else "ok"
    print(f"  [{mark}] {command:<16} exit {run.exit_code}  {run.seconds:6.1f}s", flush=True)
    return run


def history_repo(project: str, sources: dict[str, Path], dest: Path) -> Path:
    """A git repository with one commit per release of ``project``, oldest first, on main."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)

    def git(*cmd: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *cmd],
            cwd=dest,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    for version, src in sources.items():
        for child in dest.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.egg-info"))
        git("add", "-A")
        git("commit", "-q", "-m", f"{project} {version}")
    return dest


@dataclass
class Plan:
    release: Release
    src: Path
    pin: str
    tree: Path
    runs: list[Run] = field(default_factory=list)


def evaluate(plans: list[Plan], work: Path, *, scans_only: bool = False) -> list[Run]:
    """Every command on every release (``scans_only``: the scans and the pair scans only)."""
    runs: list[Run] = []
    by_family: dict[str, list[Plan]] = collections.defaultdict(list)
    for plan in plans:
        by_family[plan.release.project].append(plan)
    for plan in plans:
        rel, src, tree = plan.release, plan.src, str(plan.tree)
        plugin = str(src / rel.package)
        print(f"{rel.label} at vllm {plan.pin}", flush=True)
        base = ["--plugin", plugin, "--vllm", tree]
        runs.append(rebasekit("scan", rel.label, ["scan", *base, "--json"], src, parse=True))
        if rel.patch_base:
            configured = ["scan", *base, "--patch-base", rel.patch_base, "--json"]
            runs.append(rebasekit("scan+base", rel.label, configured, src, parse=True))
        if scans_only:
            continue
        pb = ["--patch-base", rel.patch_base] if rel.patch_base else []
        runs.append(
            rebasekit("scan-imports", rel.label, ["scan-imports", *base, *pb], src, parse=False)
        )
        runs.append(
            rebasekit(
                "scan-signatures", rel.label, ["scan-signatures", *base, *pb], src, parse=False
            )
        )
        show = ["corpus", "show", "--plugin", plugin, "--vllm", tree, *pb, "--json"]
        runs.append(rebasekit("corpus show", rel.label, show, src, parse=False))
        family = by_family[rel.project]
        i = family.index(plan)
        if i + 1 < len(family):
            old, new = plan, family[i + 1]
        elif i > 0:
            old, new = family[i - 1], plan
        else:
            old = new = plan
        pair = ["--from", str(old.tree), "--to", str(new.tree)]
        runs.append(
            rebasekit(
                "diff-method",
                rel.label,
                ["diff-method", rel.patched_method, *pair, "--unified"],
                src,
                parse=False,
            )
        )
        book = work / f"RUNBOOK-{rel.project}-{rel.version}.md"
        runbook = [
            "runbook",
            *pair,
            "--project",
            str(src),
            "--plugin",
            rel.package,
            "--write",
            str(book),
            "--force",
            "--allow-incomplete",  # the plugin declares no patch bases: plan it anyway
        ]
        runs.append(rebasekit("runbook", rel.label, runbook, src, parse=False))
    for family in by_family.values():
        for old, new in zip(family, family[1:]):
            label = f"{old.release.label} -> {new.release.version}"
            print(f"{label}: vllm {old.pin} -> {new.pin}", flush=True)
            args = [
                "scan",
                "--plugin",
                str(old.src / old.release.package),
                "--from",
                str(old.tree),
                "--to",
                str(new.tree),
                *(["--patch-base", old.release.patch_base] if old.release.patch_base else []),
                "--json",
            ]
            runs.append(rebasekit("scan --from/--to", label, args, old.src, parse=True))
    for project, family in by_family.items():
        if len(family) < 2 or scans_only:
            continue
        sources = {p.release.version: p.src for p in family}
        repo = history_repo(project, sources, work / f"{project}-history")
        print(f"{project} history repository", flush=True)
        args = ["compare-pins", "--repo", str(repo), "--history", "--json"]
        base = family[0].release.patch_base
        if base:
            # no probe file there: the rows are derived from the patch classes
            args += ["--patch-base", base]
        runs.append(rebasekit("compare-pins", f"{project} (git)", args, repo, parse=False))
    return runs


def _codes(summary: dict, severity: str) -> str:
    items = [
        f"{code.split(':')[0]}×{n}"
        for code, n in summary["by_code"].items()
        if code.endswith(":" + severity)
    ]
    return ", ".join(items) or "-"


def render(plans: list[Plan], runs: list[Run]) -> str:
    lines = [
        "# rebasekit on real plugins",
        "",
        "Produced by `python bench/realplugins/run.py` (sources fetched from the package",
        "registry into `~/.cache/rebasekit-bench` and rebasekit's tree cache; arctic-inference",
        "0.2.0 and 0.3.0 held out). Each scan runs from the plugin's project root, as a",
        "subprocess; times are wall-clock on the 2-core development machine, warm caches",
        "unless the run was the first one.",
        "",
        "## Releases and their pins",
        "",
        "| release | vLLM pin (read from) |",
        "|---|---|",
    ]
    for p in plans:
        lines.append(f"| {p.release.label} | {p.pin} |")
    scans = [r for r in runs if r.command in ("scan", "scan+base", "scan --from/--to")]
    lines += [
        "",
        "## Scans",
        "",
        "`scan` = no configuration; `scan+base` = `--patch-base ArcticPatch`; `scan --from/--to`",
        "= the older release scanned from its pin to the newer release's pin.",
        "",
        "| release | command | exit | time (s) | complete | patches by rule | errors | warnings | info | error codes | warning codes | drift |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in scans:
        if r.report is None:
            lines.append(
                f"| {r.release} | {r.command} | {r.exit_code} | {r.seconds} | no report | | | | | | | |"
            )
            continue
        s = summarise(r.report)
        sev = s["by_severity"]
        drift = ", ".join(f"{k} {v}" for k, v in s["by_drift"].items()) or "-"
        patches = ", ".join(f"{k} {v}" for k, v in s["patches"].items()) or "none"
        lines.append(
            f"| {r.release} | {r.command} | {r.exit_code} | {r.seconds} | {s['complete']} | {patches} "
            f"| {sev.get('error', 0)} | {sev.get('warning', 0)} | {sev.get('info', 0)} "
            f"| {_codes(s, 'error')} | {_codes(s, 'warning')} | {drift} |"
        )
    commands = [
        "scan",
        "scan+base",
        "scan-imports",
        "scan-signatures",
        "corpus show",
        "diff-method",
        "runbook",
    ]
    lines += [
        "",
        "## Every command: exit codes",
        "",
        "0 clean, 1 findings (diff-method: changed), 2 bad input or incomplete, 3 internal error.",
        "**BUG** marks a traceback or exit 3.",
        "",
        "| release | " + " | ".join(commands) + " |",
        "|---|" + "---|" * len(commands),
    ]
    for p in plans:
        cells = []
        for c in commands:
            r = next((r for r in runs if r.release == p.release.label and r.command == c), None)
            cells.append("n/a" if r is None else f"{r.exit_code}{' **BUG**' if r.bug else ''}")
        lines.append(f"| {p.release.label} | " + " | ".join(cells) + " |")
    for r in runs:
        if r.command == "compare-pins":
            lines += [
                "",
                f"`compare-pins --history` over the {r.release.removesuffix(' (git)')} git "
                f"repository: exit {r.exit_code}"
                f"{' **BUG**' if r.bug else ''}, {r.seconds} s.",
            ]
    bugs = [r for r in runs if r.bug or r.exit_code == 2]
    if bugs:
        lines += ["", "## Exit 2 or worse: what the command said", ""]
        for r in bugs:
            tail = r.stderr_tail.replace("\n", " ").strip()[-300:]
            lines.append(f"- {r.release}, `{r.command}` (exit {r.exit_code}): {tail}")
    return "\n".join(lines) + "\n"


def _kept_recall_section(path: Path) -> str:
    """The recall section ``recall.py`` maintains in ``path``, so a rerun here keeps it."""
    if not path.exists():
        return ""
    text = path.read_text()
    start = text.find("## Drift-fix recall")
    return "\n" + text[start:] if start >= 0 and "<!-- recall:end -->" in text[start:] else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", default=[], help="PROJECT==VERSION (repeatable)")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="folder for RESULTS.md and results.json"
    )
    parser.add_argument(
        "--scans-only", action="store_true", help="only scan (both configurations) and pair scans"
    )
    parser.add_argument(
        "--rebasekit-src",
        type=Path,
        help="folder holding a rebasekit/ package to run instead of the installed one",
    )
    opts = parser.parse_args()
    global REBASEKIT_SRC
    REBASEKIT_SRC = opts.rebasekit_src.resolve() if opts.rebasekit_src else None
    chosen = [r for r in RELEASES if not opts.only or f"{r.project}=={r.version}" in opts.only]
    plans = []
    for rel in chosen:
        src = fetch.sdist(rel.project, rel.version)
        pin = fetch.read_pin(src)
        plans.append(Plan(rel, src, pin, fetch.vllm_tree(pin)))
    with tempfile.TemporaryDirectory(prefix="rk-realplugins-") as tmp:
        runs = evaluate(plans, Path(tmp), scans_only=opts.scans_only)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "results.json").write_text(
        json.dumps(
            {"pins": {p.release.label: p.pin for p in plans}, "runs": [r.to_json() for r in runs]},
            indent=1,
        )
        + "\n"
    )
    text = render(plans, runs)
    results = opts.out / "RESULTS.md"
    text += _kept_recall_section(results)
    results.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
