"""``compare-pins`` rows derived from the patch corpus, over a real git history.

The plugin keeps no probe file; each commit bumps the vLLM pin, and each pin gets its
own small upstream tree (``--tree PIN=FOLDER``), so the rows must move exactly where the
upstream member moved, and the flags must fire on those rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from history_gitrepo import GitRepo

from rebasekit.cli import app

PYPROJECT = """\
[project]
name = "plug"
version = "0.1.0"

[project.optional-dependencies]
vllm = ["vllm=={pin}"]

[project.entry-points."vllm.general_plugins"]
plug = "plug.plugin:register"

[tool.rebasekit]
patch-bases = ["Patch"]
"""

PATCHES = """\
from vllm.runner import Runner


class Patch:
    def __class_getitem__(cls, target):
        return cls


class RunnerPatch(Patch[Runner]):
    _orig_step = Runner.step

    def step(self, *args, **kwargs):
        return self._orig_step(*args, **kwargs)

    def mode(self, *args):
        return self._orig_mode(*args)

    def gone(self):
        return None

    def plan(self, batch):
        sizes = [len(x) for x in batch]
        total = sum(sizes)
        ordered = sorted(sizes)
        return total, ordered

    def own_helper(self):
        return 1
"""

# The upstream Runner at each pin: step grows a parameter on every bump but the last
# (STALLED), mode changes twice and then back to its first form (REVERTED), gone disappears (VANISHED), plan's
# body (copied by the plugin) changes once.
PLAN_OLD = """\
    def plan(self, batch):
        sizes = [len(x) for x in batch]
        total = sum(sizes)
        ordered = sorted(sizes)
        return total, ordered
"""
PLAN_NEW = """\
    def plan(self, batch):
        sizes = [len(x) for x in batch if x]
        total = sum(sizes)
        ordered = sorted(sizes)
        return total, ordered
"""
PINS = {
    "0.1.0": ("x", "self", True, PLAN_OLD),
    "0.2.0": ("x, y", "self, fast", True, PLAN_OLD),
    "0.3.0": ("x, y, z", "self, slow", True, PLAN_NEW),
    "0.4.0": ("x, y, z", "self", False, PLAN_NEW),
}


def upstream(root: Path, pin: str) -> Path:
    step, mode, has_gone, plan = PINS[pin]
    gone = "    def gone(self):\n        pass\n\n" if has_gone else ""
    folder = root / f"vllm-{pin}"
    (folder / "vllm").mkdir(parents=True)
    (folder / "vllm" / "__init__.py").write_text(f'__version__ = "{pin}"\n')
    (folder / "vllm" / "runner.py").write_text(
        "class Runner:\n"
        f"    def step(self, {step}):\n        pass\n\n"
        f"    def mode({mode}):\n        pass\n\n"
        f"{gone}{plan}"
    )
    return folder


def history(tmp_path: Path, pins: list[str], extra: dict[str, str] | None = None) -> GitRepo:
    repo = GitRepo(tmp_path / "r")
    for pin in pins:
        repo.commit(
            f"pin {pin}",
            {
                "pyproject.toml": PYPROJECT.format(pin=pin),
                "plug/__init__.py": "",
                "plug/plugin.py": "def register():\n    from plug import patches\n",
                "plug/patches.py": PATCHES,
                **(extra or {}),
            },
        )
    return repo


def trees(tmp_path: Path, pins: list[str]) -> list[str]:
    args: list[str] = []
    for pin in pins:
        args += ["--tree", f"{pin}={upstream(tmp_path / 'up', pin)}"]
    return args


def ledger(tmp_path: Path, pins: list[str], *more: str) -> tuple[int, dict, str]:
    repo = history(tmp_path, pins)
    res = invoke(
        app,
        ["compare-pins", "--repo", repo.root, "--history", "--json", *trees(tmp_path, pins), *more],
    )
    return res.exit_code, json.loads(res.stdout), res.stderr


def row(data: dict, label: str) -> dict:
    rows = {r["label"]: r for r in data["rows"]}
    assert label in rows, sorted(rows)
    return rows[label]


def values(r: dict) -> list[str | None]:
    return [cell["value"] for cell in r["cells"].values()]


ALL = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]


def test_signature_rows_move_at_the_bumps_that_changed_them(tmp_path):
    code, data, _ = ledger(tmp_path, ALL)
    assert code == 1  # flags raised
    assert data["complete"] is True
    assert values(row(data, "sig Runner.step")) == [
        "step(self, x)",
        "step(self, x, y)",
        "step(self, x, y, z)",
        "step(self, x, y, z)",
    ]
    step = row(data, "sig Runner.step")
    assert step["kind"] == "upstream-signature"
    assert step["target"] == "vllm.runner.Runner.step"


def test_flags_fire_over_derived_rows(tmp_path):
    _, data, _ = ledger(tmp_path, ALL)
    assert row(data, "sig Runner.step")["flags"] == ["STALLED"]
    assert row(data, "sig Runner.mode")["flags"] == ["REVERTED"]
    assert row(data, "sig Runner.gone")["flags"] == ["VANISHED"]
    assert values(row(data, "sig Runner.gone"))[-1] is None


def test_rows_without_a_move_raise_no_flag(tmp_path):
    code, data, _ = ledger(tmp_path, ["0.3.0", "0.4.0"])
    assert row(data, "sig Runner.step")["flags"] == []
    assert values(row(data, "sig Runner.step")) == ["step(self, x, y, z)"] * 2


def test_a_mirrored_override_gets_a_body_row_a_wrapper_does_not(tmp_path):
    _, data, _ = ledger(tmp_path, ALL)
    body = values(row(data, "body Runner.plan"))
    assert body[0] == body[1] and body[1] != body[2] and body[2] == body[3]
    assert all(v and len(v) == 12 for v in body)
    labels = {r["label"] for r in data["rows"]}
    assert "body Runner.step" not in labels and "body Runner.mode" not in labels


def test_members_only_the_plugin_defines_are_left_out_and_named(tmp_path):
    _, data, err = ledger(tmp_path, ALL)
    assert "sig Runner.own_helper" not in {r["label"] for r in data["rows"]}
    assert any("Runner.own_helper" in n for n in data["notes"])
    assert "Runner.own_helper" in err


def test_a_probe_file_in_force_turns_derivation_off_unless_asked(tmp_path):
    probes = tmp_path / "probes.toml"
    probes.write_text('[[probe]]\nlabel = "pin"\npin = true\n')
    _, data, _ = ledger(tmp_path, ALL, "--probes", str(probes))
    assert [r["label"] for r in data["rows"]] == ["pin"]
    _, data, _ = ledger(tmp_path / "again", ALL, "--probes", str(probes), "--derive")
    assert "sig Runner.step" in {r["label"] for r in data["rows"]}


def test_no_derive_keeps_the_pin_row_only(tmp_path):
    _, data, _ = ledger(tmp_path, ALL, "--no-derive")
    assert [r["label"] for r in data["rows"]] == ["vLLM pin"]


def test_an_upstream_tree_that_cannot_be_opened_makes_the_ledger_incomplete(tmp_path):
    repo = history(tmp_path, ["0.1.0", "0.2.0"])
    args = ["compare-pins", "--repo", repo.root, "--history", "--json"]
    args += ["--tree", f"0.1.0={upstream(tmp_path / 'up', '0.1.0')}"]
    args += ["--tree", f"0.2.0={tmp_path / 'missing'}"]
    res = invoke(app, args)
    assert res.exit_code == 2, res.output
    data = json.loads(res.stdout)
    assert data["complete"] is False
    assert [d["kind"] for d in data["degradations"]] == ["upstream-unavailable"]
    cell = row(data, "sig Runner.step")["cells"]["C2"]
    assert cell == {"value": None, "missing": "no vLLM tree"}


def test_a_malformed_tree_option_is_bad_input(tmp_path):
    repo = history(tmp_path, ["0.1.0"])
    res = invoke(app, ["compare-pins", "--repo", repo.root, "--tree", "0.1.0"])
    assert res.exit_code == 2
    assert "is not PIN=SPEC" in res.stderr


def test_without_a_known_plugin_package_nothing_is_derived_and_it_says_why(tmp_path):
    repo = GitRepo(tmp_path / "r")
    repo.commit("pin", {"pyproject.toml": '[project]\nname = "p"\nversion = "1"\n'})
    res = invoke(app, ["compare-pins", "--repo", repo.root, "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == 0
    assert [r["label"] for r in data["rows"]] == ["vLLM pin"]
    assert "plugin package is unknown" in data["notes"][0]


def test_the_markdown_ledger_records_the_derivation_options(tmp_path):
    repo = history(tmp_path, ["0.1.0", "0.2.0"])
    out = repo.root / "EVOLUTION.md"
    args = ["compare-pins", "--repo", repo.root, "--history", "--patch-base", "Patch"]
    args += [*trees(tmp_path, ["0.1.0", "0.2.0"]), "--write", out]
    res = invoke(app, args)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "--patch-base Patch --tree 0.1.0=" in text
    assert "| sig Runner.step | `step(self, x)` | `step(self, x, y)` |  |" in text


@pytest.mark.network
def test_real_arctic_inference_releases_show_derived_rows_moving_at_the_bumps(tmp_path):
    """One commit per arctic-inference release 0.0.9 .. 0.1.2 (pins 0.9.2, 0.10.1, 0.10.1,
    0.11.0); the plugin's ArcticPatch classes give the rows. In vLLM's own sources
    ``GPUModelRunner.load_model`` gained ``eep_scale_up`` in 0.10.1 and
    ``SpeculativeConfig.from_dict`` is gone after 0.9.2."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench" / "realplugins"))
    import fetch
    import run

    versions = ["0.0.9", "0.1.0", "0.1.1", "0.1.2"]
    sources = {v: fetch.sdist("arctic-inference", v) for v in versions}
    for v in versions:
        fetch.vllm_tree(fetch.read_pin(sources[v]))
    repo = run.history_repo("arctic-inference", sources, tmp_path / "arctic")
    res = invoke(
        app,
        ["compare-pins", "--repo", repo, "--history", "--patch-base", "ArcticPatch", "--json"],
    )
    assert res.exit_code in (0, 1), res.output
    data = json.loads(res.stdout)
    assert data["complete"] is True
    assert [c["pin"] for c in data["columns"]] == ["0.9.2", "0.10.1", "0.11.0"]
    load = values(row(data, "sig GPUModelRunner.load_model"))
    assert "eep_scale_up" not in (load[0] or "") and "eep_scale_up" in (load[1] or "")
    assert row(data, "sig SpeculativeConfig.from_dict")["flags"] == ["VANISHED"]
    derived = [r for r in data["rows"] if r["kind"] == "upstream-signature"]
    assert len(derived) >= 18  # one per patched upstream member at least (18+ patch classes)
    moved = [r for r in derived if len(set(values(r))) > 1]
    assert moved, "no derived row moved over three pins"


def test_a_change_to_the_plugin_package_moves_the_branch_column_as_of_commit(tmp_path):
    """Derived rows read the plugin's patches, so the main column names the last commit
    that changed them (the pin file alone would point at the first commit)."""
    repo = history(tmp_path, ["0.1.0"])
    repo.commit("patch tweak", {"plug/patches.py": PATCHES + "\n# tweak\n"})
    res = invoke(app, ["compare-pins", "--repo", repo.root, "--json", *trees(tmp_path, ["0.1.0"])])
    data = json.loads(res.stdout)
    main = data["columns"][0]
    assert main["name"] == "main"
    assert main["since"] == main["commit"]  # the tweak, the tip
    res = invoke(app, ["compare-pins", "--repo", repo.root, "--json", "--no-derive"])
    plain = json.loads(res.stdout)["columns"][0]
    assert plain["since"] != plain["commit"]  # only the pin file is watched then
