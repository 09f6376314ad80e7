"""How many of the drift fixes real maintainers made does ``rebasekit scan --from --to`` name?

    python bench/realplugins/recall.py [--pair 0.1.0->0.1.1 ...] [--out DIR] [--rebasekit-src DIR]

For each consecutive arctic-inference pair (0.0.9 -> 0.1.0 -> 0.1.1 -> 0.1.2) the OLDER
release is scanned from its vLLM pin to the newer release's pin, twice: with
``--patch-base ArcticPatch`` and with no configuration. The findings are matched against
the hand-made list of the maintainers' drift fixes in ``drift_fixes.toml``.

Matching rule (``match_pair``), per fix and finding, ignoring findings whose drift is
``preexisting`` (they existed at OLD, so they do not report the change):

* **place**: the finding's plugin file equals the fix's ``file``, and its plugin symbol
  equals the fix's ``symbol`` (a module-level finding has no symbol and matches
  ``"<module>"``; a finding on a class matches the fix's methods of that class);
* **named**: at that place, a finding whose upstream keys (``finding_keys``) contain the
  fix's key (``upstream`` or ``upstream:member``) or one of its ``also`` keys. Upstream keys
  are the finding's upstream symbol, its imported target and module, the class and
  attribute (``Class:attr``) of attribute findings, the function and parameter
  (``func:param``) of signature findings, the callee of call findings. For fixes whose
  change *is* a body change (``BODY_KINDS``: body re-ports, retired patches, fork
  re-syncs), an RK402 on the same upstream definition, or an RK403 whose changed list holds
  the followed definition, names it too;
* **generic**: not named, but an RK402 (body changed) at that place, or an RK403 (fork
  drifted) on that file, says only that the followed code changed;
* **missed**: neither.

``recall`` = named / fixes (target >= 85 %). A finding with drift ``new`` that neither names
nor generically matches any fix of its pair is *unmatched* (target <= 10 per pair): noise,
or a change the maintainers did not react to.

Results: ``RECALL.md`` and ``recall.json`` beside this file; the summary table is also put
between the recall markers of ``RESULTS.md`` and of the README.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

FIXES_FILE = HERE / "drift_fixes.toml"
PROJECT = "arctic-inference"
PACKAGE = "arctic_inference"
PATCH_BASE = "ArcticPatch"
RELEASES = ["0.0.9", "0.1.0", "0.1.1", "0.1.2"]
PAIRS = [f"{old}->{new}" for old, new in zip(RELEASES, RELEASES[1:])]
KINDS = {
    "alias-target-removed": "an `_orig_` alias captures an upstream attribute that is gone",
    "override-target-removed": "an override replaces an upstream attribute that is gone",
    "return-shape": "an upstream function returns a tuple of another length",
    "attribute-removed": "an upstream attribute the plugin reads is gone",
    "attribute-renamed": "an upstream attribute the plugin reads has a new name",
    "attribute-kind-changed": "an upstream attribute holds another kind of value",
    "attribute-added": "upstream now reads an attribute a replaced method must set",
    "call-signature": "a call into upstream no longer binds (parameter added/removed/renamed)",
    "call-removed": "the plugin calls an upstream function that is gone",
    "dataclass-field": "a field of an upstream dataclass the plugin constructs is gone",
    "signature-param-added": "an upstream definition the plugin overrides gained a parameter",
    "signature-param-removed": "an upstream definition the plugin overrides lost a parameter",
    "signature-param-renamed": "an upstream parameter the override mirrors has a new name",
    "import-module-removed": "an upstream module the plugin imports is gone",
    "body-report": "the plugin copies an upstream body that changed and re-ported it",
    "patch-retired": "the upstream body a patch replaced changed; the patch was deleted",
    "fork-resync": "a forked upstream file was re-synced with upstream",
    "wrapper-changed": "upstream wraps an object differently, so it is reached another way",
    "new-upstream-mechanism": "upstream added a mechanism the plugin had to patch as well",
    "default-changed": "an upstream default changed, so a path the plugin patches now runs",
}
BODY_KINDS = {"body-report", "patch-retired", "fork-resync"}
GENERIC_CODES = {"RK402", "RK403"}
FIELDS = {"pair", "file", "symbol", "follows", "kind", "upstream", "member", "also", "evidence"}
REQUIRED = FIELDS - {"member", "also"}


@dataclass(frozen=True)
class Fix:
    pair: str
    file: str
    symbol: str
    follows: str
    kind: str
    upstream: str
    evidence: str
    member: str | None = None
    also: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.upstream}:{self.member}" if self.member else self.upstream

    @property
    def keys(self) -> set[str]:
        return {self.key, *self.also}

    @property
    def label(self) -> str:
        return f"{self.file} {self.symbol} [{self.kind}] {self.key}"


def load_fixes(path: Path = FIXES_FILE) -> list[Fix]:
    """The fix list, checked: known fields and kinds, pairs of consecutive releases."""
    data = tomllib.loads(path.read_text())
    fixes = []
    for i, raw in enumerate(data.get("fix", [])):
        where = f"{path.name}: fix #{i + 1}"
        unknown = set(raw) - FIELDS
        missing = REQUIRED - set(raw)
        if unknown or missing:
            raise SystemExit(
                f"{where}: unknown fields {sorted(unknown)}, missing {sorted(missing)}"
            )
        if raw["pair"] not in PAIRS:
            raise SystemExit(f"{where}: pair {raw['pair']!r} is not one of {PAIRS}")
        if raw["kind"] not in KINDS:
            raise SystemExit(f"{where}: kind {raw['kind']!r} is not one of {sorted(KINDS)}")
        fixes.append(Fix(**{**raw, "also": tuple(raw.get("also", ()))}))
    if not fixes:
        raise SystemExit(f"{path}: no [[fix]] entries")
    return fixes


def finding_keys(finding: dict) -> set[str]:
    """The upstream things a finding names, in the key forms of ``Fix.key``."""
    ident = finding.get("identity") or {}
    details = finding.get("details") or {}
    symbol = (finding.get("upstream") or {}).get("symbol")
    keys: set[str] = set()
    if symbol:
        keys.add(symbol)
    for name in ("target", "callee_expr"):
        if isinstance(ident.get(name), str):
            keys.add(ident[name])
    for name in ("callee", "module", "moved_to"):
        if isinstance(details.get(name), str):
            keys.add(details[name])
    if isinstance(ident.get("target"), str) and isinstance(ident.get("attribute"), str):
        keys.add(f"{ident['target']}:{ident['attribute']}")
    if symbol and isinstance(ident.get("param"), str):
        keys.add(f"{symbol}:{ident['param']}")
    attr = details.get("attr") or ident.get("attr")
    if isinstance(details.get("target"), str) and isinstance(attr, str):
        keys.add(f"{details['target']}:{attr}")
    return keys


def _at_place(fix: Fix, finding: dict) -> bool:
    plugin = finding.get("plugin") or {}
    if plugin.get("path") != fix.file:
        return False
    symbol = plugin.get("symbol") or "<module>"
    return symbol == fix.symbol or fix.symbol.startswith(symbol + ".")


def _fork_names(fix: Fix, finding: dict) -> bool:
    changed = (finding.get("identity") or {}).get("changed") or []
    return any(fix.follows.endswith("." + name) for name in changed)


def verdict(fix: Fix, finding: dict) -> str | None:
    """``named``, ``generic`` or None: what this finding says about this fix."""
    if finding.get("drift") == "preexisting":
        return None
    code = finding.get("code")
    plugin = finding.get("plugin") or {}
    if code == "RK403":
        if plugin.get("path") != fix.file:
            return None
        return "named" if fix.kind in BODY_KINDS and _fork_names(fix, finding) else "generic"
    if not _at_place(fix, finding):
        return None
    if code == "RK402":
        upstream = (finding.get("upstream") or {}).get("symbol")
        named = fix.kind in BODY_KINDS and upstream in fix.keys | {fix.follows}
        return "named" if named else "generic"
    return "named" if fix.keys & finding_keys(finding) else None


@dataclass
class PairResult:
    pair: str
    config: str
    exit_code: int | None
    complete: bool | None
    fixes: int
    named: list[str] = field(default_factory=list)
    generic: list[str] = field(default_factory=list)
    missed: list[dict] = field(default_factory=list)
    new_findings: int = 0
    unmatched: list[str] = field(default_factory=list)
    unmatched_info: int = 0  # of ``unmatched``, the info-severity ones

    @property
    def recall(self) -> float | None:
        return len(self.named) / self.fixes if self.fixes else None


def match_pair(
    pair: str, config: str, fixes: list[Fix], report: dict | None, exit_code: int | None
) -> PairResult:
    """Each fix of ``pair`` classified against ``report``'s findings; unmatched new findings."""
    mine = [f for f in fixes if f.pair == pair]
    result = PairResult(
        pair, config, exit_code, None if report is None else report.get("complete"), len(mine)
    )
    findings = [] if report is None else report.get("findings", [])
    used: set[int] = set()
    for fix in mine:
        verdicts = {i: verdict(fix, f) for i, f in enumerate(findings)}
        hits = {i for i, v in verdicts.items() if v}
        used |= hits
        if "named" in verdicts.values():
            result.named.append(fix.label)
        elif hits:
            result.generic.append(fix.label)
        else:
            result.missed.append({"kind": fix.kind, "fix": fix.label})
    for i, f in enumerate(findings):
        if f.get("drift") != "new":
            continue
        result.new_findings += 1
        if i not in used:
            plugin = f.get("plugin") or {}
            result.unmatched.append(
                f"{f['code']} {f['severity']} {plugin.get('path')} "
                f"{plugin.get('symbol') or '<module>'}: {f['message'][:160]}"
            )
            result.unmatched_info += f.get("severity") == "info"
    return result


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def table(results: list[PairResult]) -> str:
    """The summary table, one row per pair and configuration."""
    lines = [
        "| pair (vLLM pins) | configuration | exit | fixes | named | generic only | missed "
        "| recall | new findings | unmatched new | of which info |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.pair} | {r.config} | {r.exit_code} | {r.fixes} | {len(r.named)} "
            f"| {len(r.generic)} | {len(r.missed)} | {_pct(r.recall)} | {r.new_findings} "
            f"| {len(r.unmatched)} | {r.unmatched_info} |"
        )
    fixes = sum(r.fixes for r in results if r.config == "--patch-base")
    named = sum(len(r.named) for r in results if r.config == "--patch-base")
    lines += [
        "",
        f"Over all pairs with `--patch-base`: {named} of {fixes} fixes named ({_pct(named / fixes if fixes else None)}).",
    ]
    return "\n".join(lines)


def render(results: list[PairResult], pins: dict[str, str]) -> str:
    """RECALL.md: the table, then the misses by kind and the unmatched findings per run."""
    out = [
        "# Drift-fix recall on arctic-inference releases",
        "",
        "Produced by `python bench/realplugins/recall.py` (matching rule in its docstring;",
        "ground truth in `drift_fixes.toml`). Pins: "
        + ", ".join(f"{v} -> vLLM {p}" for v, p in pins.items())
        + ".",
        "",
        table(results),
    ]
    for r in results:
        out += ["", f"## {r.pair}, {r.config}", ""]
        by_kind: dict[str, list[str]] = collections.defaultdict(list)
        for m in r.missed:
            by_kind[m["kind"]].append(m["fix"])
        if r.generic:
            out += ["Generic only (a body-changed finding, nothing naming the change):", ""]
            out += [f"- {g}" for g in r.generic] + [""]
        if by_kind:
            out += ["Missed, by kind:", ""]
            for kind, items in sorted(by_kind.items()):
                out.append(f"- **{kind}** ({len(items)}): " + "; ".join(items))
            out.append("")
        if r.unmatched:
            out += [f"New findings matching no fix ({len(r.unmatched)}):", ""]
            out += [f"- {u}" for u in r.unmatched]
        if not (r.generic or by_kind or r.unmatched):
            out.append("Every fix named; no unmatched new finding.")
    return "\n".join(out) + "\n"


START, END = "<!-- recall:start -->", "<!-- recall:end -->"


def put_section(path: Path, body: str) -> bool:
    """Replace the text between the recall markers of ``path``; False when it has none."""
    if not path.exists():
        return False
    text = path.read_text()
    if START not in text or END not in text:
        return False
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{body}\n{END}{tail}")
    return True


def run_pair(pair: str, plans: dict[str, object]) -> list[tuple[str, object]]:
    """Both scans of ``pair``'s older release, as ``run.Run`` objects by configuration."""
    import run

    old_v, new_v = pair.split("->")
    old, new = plans[old_v], plans[new_v]
    args = [
        "scan",
        "--plugin",
        str(old.src / PACKAGE),
        "--from",
        str(old.tree),
        "--to",
        str(new.tree),
        "--json",
    ]
    label = f"{PROJECT} {pair}"
    print(f"{label}: vllm {old.pin} -> {new.pin}", flush=True)
    configured = run.rebasekit(
        "scan --patch-base", label, [*args, "--patch-base", PATCH_BASE], old.src, parse=True
    )
    bare = run.rebasekit("scan (no config)", label, args, old.src, parse=True)
    return [("--patch-base", configured), ("no configuration", bare)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pair", action="append", default=[], help=f"one of {PAIRS} (repeatable)")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="folder for RECALL.md and recall.json"
    )
    parser.add_argument("--readme", type=Path, default=HERE.parents[1] / "README.md")
    parser.add_argument(
        "--rebasekit-src", type=Path, help="folder holding a rebasekit/ package to run instead"
    )
    opts = parser.parse_args()
    import fetch
    import run

    run.REBASEKIT_SRC = opts.rebasekit_src.resolve() if opts.rebasekit_src else None
    fixes = load_fixes()
    pairs = opts.pair or PAIRS
    bad = [p for p in pairs if p not in PAIRS]
    if bad:
        raise SystemExit(f"unknown pair {bad[0]!r}; pick from {PAIRS}")
    versions = sorted({v for p in pairs for v in p.split("->")}, key=RELEASES.index)
    plans = {}
    for v in versions:
        src = fetch.sdist(PROJECT, v)
        pin = fetch.read_pin(src)
        plans[v] = run.Plan(
            run.Release(PROJECT, v, PACKAGE, PATCH_BASE, ""), src, pin, fetch.vllm_tree(pin)
        )
    results = []
    for pair in pairs:
        for config, done in run_pair(pair, plans):
            code = done.exit_code
            results.append(match_pair(pair, config, fixes, done.report, code))
    opts.out.mkdir(parents=True, exist_ok=True)
    pins = {v: p.pin for v, p in plans.items()}
    doc = render(results, pins)
    (opts.out / "RECALL.md").write_text(doc)
    payload = [{**asdict(r), "recall": r.recall} for r in results]
    (opts.out / "recall.json").write_text(
        json.dumps({"pins": pins, "results": payload}, indent=1) + "\n"
    )
    summary = table(results)
    for target in (opts.out / "RESULTS.md", opts.readme):
        if not put_section(target, summary):
            print(f"note: {target} has no {START} ... {END} section; not updated", file=sys.stderr)
    print(doc)


if __name__ == "__main__":
    main()
