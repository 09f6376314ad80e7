"""Scan output through the CLI: SARIF 2.1.0 structure, the documented JSON schema,
--select/--ignore, inline suppressions, and human output at 80 and wide columns."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_runner import StrictRunner as CliRunner

from rebasekit.cli import app
from rebasekit.codes import CODES
from rebasekit.findings import Finding, Location
from rebasekit.report import SCHEMA_VERSION

HERE = Path(__file__).parent
FIX = HERE / "fixtures"
PLUGIN = str(FIX / "plugin" / "tinyplug")
OLD, NEW = str(FIX / "upstream_old"), str(FIX / "upstream_new")
DEEP = HERE / "fixtures_deep"
DEEP_ARGS = [
    "--plugin",
    str(DEEP / "plugin" / "deepplug"),
    "--from",
    str(DEEP / "upstream_old"),
    "--to",
    str(DEEP / "upstream_new"),
]


def run(*args: str, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns else {}
    return CliRunner().invoke(app, list(args), env=env)


def scan_json(*extra: str, plugin: str = PLUGIN) -> dict:
    res = run("scan", "--plugin", plugin, "--from", OLD, "--to", NEW, "--json", *extra)
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


# -- SARIF ------------------------------------------------------------------------------
_LEVELS = {"none", "note", "warning", "error"}


def _check_message(msg: dict) -> None:
    assert isinstance(msg, dict) and (
        isinstance(msg.get("text"), str) or isinstance(msg.get("id"), str)
    )


def _check_physical(phys: dict, base_ids: set[str]) -> None:
    art = phys["artifactLocation"]
    assert isinstance(art["uri"], str) and art["uri"] and not art["uri"].startswith("/")
    assert "uriBaseId" not in art or isinstance(art["uriBaseId"], str)
    if "region" in phys:
        line = phys["region"]["startLine"]
        assert isinstance(line, int) and line >= 1


def test_sarif_2_1_0_structure():
    """The SARIF 2.1.0 schema's required properties, types and enums, checked by hand.

    No PyPI package ships the OASIS schema file, so the test walks the log along the
    spec: sarifLog{version, runs}, run{tool{driver{name}}}, reportingDescriptor{id},
    result{message, ruleId/ruleIndex consistent, level enum}, location/physicalLocation.
    """
    res = run("scan", *DEEP_ARGS, "--sarif")
    assert res.exit_code == 1
    log = json.loads(res.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run0 = log["runs"][0]
    driver = run0["tool"]["driver"]
    assert isinstance(driver["name"], str) and isinstance(driver.get("version", ""), str)
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids)) and set(ids) == set(CODES)
    for rule in rules:
        _check_message(rule["shortDescription"])
        _check_message(rule["fullDescription"])
        assert rule["defaultConfiguration"]["level"] in _LEVELS
    bases = run0.get("originalUriBaseIds", {})
    for name, art in bases.items():
        assert art["uri"].startswith("file://") and art["uri"].endswith("/"), name
    results = run0["results"]
    assert results, "the deep fixture must produce results"
    for result in results:
        _check_message(result["message"])
        assert result["level"] in _LEVELS
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        for loc in result.get("locations", []):
            _check_physical(loc["physicalLocation"], set(bases))
            assert loc["physicalLocation"]["artifactLocation"]["uriBaseId"] in bases
        for rel in result.get("relatedLocations", []):
            assert isinstance(rel["id"], int) and rel["id"] >= -1
            _check_physical(rel["physicalLocation"], set(bases))
            assert rel["physicalLocation"]["artifactLocation"]["uriBaseId"] in bases  # declared
            _check_message(rel["message"])
        assert isinstance(result.get("properties", {}), dict)
    # one result per JSON finding, same codes in the same order
    doc = json.loads(run("scan", *DEEP_ARGS, "--json").stdout)
    assert [r["ruleId"] for r in results] == [f["code"] for f in doc["findings"]]


# -- JSON schema ------------------------------------------------------------------------
def test_json_schema_version_is_documented():
    text = (
        Path(__import__("rebasekit.report", fromlist=["x"]).__file__).parent / "SCHEMA.md"
    ).read_text()
    title = text.splitlines()[0]
    assert f"schema_version {SCHEMA_VERSION}" in title
    doc = scan_json()
    assert doc["schema_version"] == SCHEMA_VERSION
    documented = set(re.findall(r"^\| `([\w.]+)` \|", text, re.M))
    top = {k for k in doc if k != "upstream"} | {f"upstream.{k}" for k in doc["upstream"]}
    assert top <= documented, top - documented
    finding_keys = set(Finding("RK101", CODES["RK101"].severity, "m", Location("p")).to_dict())
    assert finding_keys <= documented, finding_keys - documented
    assert all(set(f) == finding_keys for f in doc["findings"])


# -- select / ignore / suppressions -------------------------------------------------------
def test_select_and_ignore_through_the_cli():
    every = scan_json()["findings"]
    codes = {f["code"] for f in every}
    for prefix in ("RK21", "RK1"):
        picked = scan_json("--select", prefix)["findings"]
        assert picked and [f["code"] for f in picked] == [
            f["code"] for f in every if f["code"].startswith(prefix)
        ]
        dropped = scan_json("--ignore", prefix)["findings"]
        assert {f["code"] for f in dropped} == {c for c in codes if not c.startswith(prefix)} - {
            "RK003"
        }
    two = sorted(codes)[:2]
    comma = scan_json("--select", ",".join(two))["findings"]
    repeated = scan_json("--select", two[0], "--select", two[1])["findings"]
    assert comma == repeated and {f["code"] for f in comma} == set(two)
    unknown = run("scan", "--plugin", PLUGIN, "--vllm", NEW, "--select", "RK9")
    assert (
        unknown.exit_code == 2
        and "RK9: no such code" in unknown.output
        and "RK101" in unknown.output
    )


def test_inline_suppressions_through_the_cli(tmp_path):
    doc = scan_json()
    assert doc["summary"]["suppressed"] >= 2
    shutil.copytree(Path(PLUGIN).parent, tmp_path / "plug")  # with its pyproject (patch-bases)
    dest = tmp_path / "plug" / "tinyplug"
    bad = dest / "bad.py"
    lines = bad.read_text().splitlines()
    marked = [n for n, line in enumerate(lines, 1) if "rebasekit: ignore[" in line]
    bad.write_text(
        "\n".join(re.sub(r"#\s*rebasekit: ignore\[[^\]]*\].*$", "", ln) for ln in lines) + "\n"
    )
    freed = scan_json(plugin=str(dest))
    assert freed["summary"]["suppressed"] == 0
    new_lines = {(f["code"], f["plugin"]["line"]) for f in freed["findings"]} - {
        (f["code"], f["plugin"]["line"]) for f in doc["findings"]
    }
    # every freed finding sits on a suppression line or the line below one
    assert len(new_lines) == doc["summary"]["suppressed"]
    assert all(line in marked or line - 1 in marked for _, line in new_lines)
    # an unused suppression is itself reported (RK003) where it is written
    (dest / "good.py").write_text(
        (dest / "good.py").read_text() + "X = 1  # rebasekit: ignore[RK105] stale\n"
    )
    unused = [f for f in scan_json(plugin=str(dest))["findings"] if f["code"] == "RK003"]
    assert [(f["plugin"]["path"], f["plugin"]["line"]) for f in unused] == [
        ("tinyplug/good.py", len((dest / "good.py").read_text().splitlines()))
    ]


# -- human output ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def deep_findings() -> list[dict]:
    return json.loads(run("scan", *DEEP_ARGS, "--json").stdout)["findings"]


def test_80_columns_one_block_per_finding(deep_findings):
    res = run("scan", *DEEP_ARGS, columns=80)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not any(line != line.rstrip() for line in lines)
    assert "┃" not in res.stdout and "│" not in res.stdout  # no squeezed table
    text = " ".join(line.strip() for line in lines)
    for f in deep_findings:
        header = (
            f"{f['plugin']['path']}:{f['plugin']['line']} {f['code']} {f['severity']} {f['drift']}"
        )
        assert header in lines, header
        assert " ".join(f["message"].split()) in text  # the whole message, markup-free
    assert "[forked]" in text or not any("[forked]" in f["message"] for f in deep_findings)
    assert re.search(rf"{len(deep_findings)} findings \([^()]*\)$", text)


def test_wide_console_keeps_tables(deep_findings):
    res = run("scan", *DEEP_ARGS, columns=200)
    assert res.exit_code == 1 and "┃" in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 200
    for path in {f["plugin"]["path"] for f in deep_findings}:
        assert path in res.stdout
