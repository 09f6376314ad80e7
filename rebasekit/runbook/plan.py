"""Assemble the runbook: the change->test map and the ordered phases with their risks.

Pure: a test suite scan, findings and a few settings in, a :class:`Runbook` out. The
phases run cheapest-first (smoke, CPU unit, GPU unit, end-to-end per feature, serving) so
the first failure is found at the lowest cost, and each phase lists the findings that are
expected to surface there. A GPU test is end-to-end when it builds an engine (see
:mod:`rebasekit.runbook.e2e`); it is placed in the phase of every feature it drives, so a
feature's phase names every test that reaches its first runtime step.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from rebasekit.findings import Finding
from rebasekit.runbook.risks import CPU, E2E, GPU, SERVING, SMOKE, Risk, classify
from rebasekit.runbook.serving import MODEL_PLACEHOLDER, serving_commands
from rebasekit.runbook.testmap import (
    Link,
    TestFile,
    merge_links,
    module_of,
    tests_for_module,
    tests_for_symbol,
)

TITLES = {
    SMOKE: "Smoke: import and plugin load",
    CPU: "CPU unit tests",
    GPU: "GPU unit tests",
    SERVING: "Serving",
}


@dataclass(frozen=True)
class Settings:
    """What the commands need: the plugin's import name, entry point, env, python, model."""

    plugin: str
    entry_point: str | None = None  # "name=module:attr" from vllm.general_plugins
    env: tuple[tuple[str, str], ...] = ()
    python: str = "python"
    model: str = MODEL_PLACEHOLDER  # a local path on the GPU machine, or a $VARIABLE to set there


@dataclass
class ChangeRow:
    """One changed plugin file or one finding, and the tests that exercise it."""

    subject: str
    kind: str  # "file" | "finding"
    links: list[Link]
    phase: str | None = None


@dataclass
class Phase:
    key: str  # "smoke", "cpu-unit", "gpu-unit", "e2e:<feature>", "serving"
    title: str
    commands: list[str]
    passing: str
    tests: list[str] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)
    gap: str | None = None  # why the phase has no test of its own, if it has none
    why: dict[str, str] = field(default_factory=dict)  # test -> why it is in this phase
    note: str | None = None  # what to prepare before the commands run


@dataclass
class Runbook:
    old: str
    new: str
    findings: list[Finding]
    changes: list[ChangeRow]
    phases: list[Phase]


def _env_prefix(settings: Settings, extra: dict[str, str] | None = None) -> str:
    pairs = dict(settings.env) | (extra or {})
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in pairs.items())


def _with_env(settings: Settings, command: str, extra: dict[str, str] | None = None) -> str:
    prefix = _env_prefix(settings, extra)
    return f"{prefix} {command}" if prefix else command


def _pytest(settings: Settings, marker: str | None, files: list[str]) -> str:
    parts = [settings.python, "-m", "pytest", "-q"] + (["-m", marker] if marker else []) + files
    return _with_env(settings, shlex.join(parts))


def _is_e2e(tf: TestFile) -> bool:
    return tf.needs_gpu and tf.engine is not None


def _smoke(settings: Settings) -> Phase:
    commands = [_with_env(settings, f'{settings.python} -c "import {settings.plugin}"')]
    if settings.entry_point:
        name, _, target = settings.entry_point.partition("=")
        module, _, attr = target.partition(":")
        commands.append(
            _with_env(settings, f'{settings.python} -c "from {module} import {attr}; {attr}()"')
        )
        loader = "from vllm.plugins import load_general_plugins; load_general_plugins()"
        commands.append(
            _with_env(
                settings,
                f'{settings.python} -c "{loader}" 2>&1 | tee smoke.log',
                {"VLLM_PLUGINS": name},
            )
            + ' && ! grep -q "Failed to load plugin" smoke.log'
        )
    return Phase(
        SMOKE,
        TITLES[SMOKE],
        commands,
        "every command exits 0 without a traceback, and vLLM's loader logs no "
        "'Failed to load plugin' (vLLM only logs plugin import errors)",
    )


def build_phases(
    suite: list[TestFile], risks: list[Risk], settings: Settings, mapped: set[str]
) -> list[Phase]:
    """Phases in run order; ``mapped`` are the test files the change map points at."""
    cpu = [t.path for t in suite if not t.needs_gpu]
    gpu_unit = [t.path for t in suite if t.needs_gpu and not _is_e2e(t)]
    e2e: dict[str, list[TestFile]] = {}
    for tf in suite:
        if _is_e2e(tf):
            for feature in tf.engine.feature_names:
                e2e.setdefault(feature, []).append(tf)
    serving_tests = e2e.pop("serving", [])
    first = [f for f in cpu if f in mapped]
    phases = [_smoke(settings)]
    phases.append(
        Phase(
            CPU,
            TITLES[CPU],
            ([_pytest(settings, "not gpu", first)] if first else [])
            + [_pytest(settings, "not gpu", [])],
            "all selected tests pass (first the files the change map names, then the "
            "whole CPU suite); no test is skipped for an import error",
            first,
        )
    )
    no_unit = (
        "every GPU test builds an engine; they run in the end-to-end phases"
        if any(_is_e2e(t) for t in suite)
        else "the suite has no GPU tests"
    )
    phases.append(
        Phase(
            GPU,
            TITLES[GPU],
            [_pytest(settings, "gpu", gpu_unit)] if gpu_unit else [],
            "all GPU unit tests pass on one GPU",
            gpu_unit,
            gap=None if gpu_unit else no_unit,
        )
    )
    features = sorted(set(e2e) | {r.feature for r in risks if r.phase == E2E})
    for feature in features:
        tests = e2e.get(feature, [])
        files = [t.path for t in tests]
        phases.append(
            Phase(
                f"{E2E}:{feature}",
                f"End-to-end: {feature}",
                [_pytest(settings, "gpu", files)] if files else [],
                "generation completes and matches the reference outputs the tests compare against",
                files,
                gap=None
                if files
                else f"no end-to-end test exercises {feature}; write one before trusting the rebase",
                why={t.path: t.engine.describe(feature) for t in tests},
            )
        )
    serving_files = [t.path for t in serving_tests]
    if serving_files:
        serve, note = [_pytest(settings, "gpu", serving_files)], None
    else:
        serve, note = serving_commands(settings.model, _env_prefix(settings))
    phases.append(
        Phase(
            SERVING,
            TITLES[SERVING],
            serve,
            "the server starts, the request returns HTTP 200 with generated text, "
            "and the server log shows the plugin loaded",
            serving_files,
            why={t.path: t.engine.describe(SERVING) for t in serving_tests},
            note=note,
        )
    )
    by_key = {p.key: p for p in phases}
    for risk in risks:
        key = f"{E2E}:{risk.feature}" if risk.phase == E2E else risk.phase
        by_key[key].risks.append(risk)
    return phases


def build_runbook(
    old: str,
    new: str,
    findings: list[Finding],
    changed_files: list[str],
    suite: list[TestFile],
    settings: Settings,
) -> Runbook:
    """The whole plan: every changed file and finding mapped to tests, then the phases."""
    risks = [classify(f) for f in findings]
    changes: list[ChangeRow] = []
    files = sorted(set(changed_files) | {f.plugin.path for f in findings if f.plugin})
    for path in files:
        changes.append(ChangeRow(path, "file", tests_for_module(module_of(path), suite)))
    for risk in risks:
        f = risk.finding
        module_links = tests_for_module(module_of(f.plugin.path), suite) if f.plugin else []
        symbol_links = (
            tests_for_symbol(f.plugin.symbol, suite) if f.plugin and f.plugin.symbol else []
        )
        where = f.plugin.render() if f.plugin else (f.upstream.render() if f.upstream else "")
        phase = f"{E2E}:{risk.feature}" if risk.phase == E2E else risk.phase
        changes.append(
            ChangeRow(
                f"{f.code} {where}", "finding", merge_links(symbol_links, module_links), phase
            )
        )
    mapped = {link.test for row in changes for link in row.links}
    return Runbook(old, new, findings, changes, build_phases(suite, risks, settings, mapped))
