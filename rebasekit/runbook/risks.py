"""Which phase a finding will first show up in, and which runtime step it endangers.

Static drift says *what* changed; the runbook must say *when* it bites. Import-time and
apply-time problems (a moved module, a missing patch target, a lost ``_orig_`` alias)
break the smoke phase: the plugin fails to load. A changed signature or a call that no
longer binds fails the first time that code runs, and where that is depends on the
upstream target: the model runner's ``execute_model``/``_prepare_inputs`` run on the first
prefill, the sampler on the first decode, a proposer on the first speculative step,
attention backends when the KV cache is allocated and first written, the scheduler on
the first ``schedule()``, argument parsing and the OpenAI server only when serving.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebasekit.findings import Finding

SMOKE, CPU, GPU, E2E, SERVING = "smoke", "cpu-unit", "gpu-unit", "e2e", "serving"
PHASE_ORDER = (SMOKE, CPU, GPU, E2E, SERVING)

# Codes that fail while the plugin is imported or its patches are applied.
LOAD_TIME_CODES = {"RK001", "RK101", "RK102", "RK103", "RK104", "RK105", "RK201", "RK202", "RK220"}


@dataclass(frozen=True)
class StepRule:
    """Keywords in a finding's targets -> the feature, phase and first step at risk."""

    keywords: tuple[str, ...]
    feature: str
    phase: str
    step: str


# First match wins; order from the most specific target to the most general.
RULES: tuple[StepRule, ...] = (
    StepRule(
        ("propos", "spec_decode", "eagle", "medusa", "draft", "mtp", "suffix", "ngram"),
        "spec-decode",
        E2E,
        "first speculative step: drafting and verifying proposed tokens",
    ),
    StepRule(
        ("sampler", "sample", "logits", "lm_head", "rejection"),
        "sampling",
        E2E,
        "first decode step: sampling from the logits",
    ),
    StepRule(
        ("attention", "attn", "kv_cache", "flash", "backend"),
        "attention",
        E2E,
        "first prefill: KV-cache allocation and the first attention write",
    ),
    StepRule(
        (
            "_prepare_inputs",
            "execute_model",
            "model_runner",
            "gpu_model_runner",
            "input_batch",
            "_update_states",
        ),
        "model-runner",
        E2E,
        "first prefill: the model runner prepares inputs and runs execute_model",
    ),
    StepRule(
        ("parallel", "distributed", "tensor_parallel", "ulysses", "all_reduce", "worker"),
        "parallelism",
        E2E,
        "worker start-up and the first collective of a multi-GPU run",
    ),
    StepRule(
        ("scheduler", "schedule", "kv_cache_manager", "block_pool"),
        "scheduling",
        E2E,
        "first schedule() call, before any forward pass",
    ),
    StepRule(
        (
            "entrypoints",
            "openai",
            "serve",
            "api_server",
            "arg_utils",
            "engineargs",
            "add_cli_args",
            "cli_args",
        ),
        "serving",
        SERVING,
        "server start-up: argument parsing and the first request",
    ),
    StepRule(
        (
            "sampling_params",
            "input_processor",
            "engine_core",
            "enginecore",
            "engine/core",
            "llm_engine",
            "processor",
        ),
        "engine",
        E2E,
        "first request: the engine front end validates and queues it",
    ),
)


@dataclass(frozen=True)
class Risk:
    """One finding placed on the plan: phase, feature and the step likely to break."""

    finding: Finding
    phase: str
    feature: str
    step: str
    why: str


def _haystack(finding: Finding) -> str:
    parts = [finding.code, finding.message]
    for loc in (finding.plugin, finding.upstream):
        if loc is not None:
            parts += [loc.path, loc.symbol or ""]
    parts.append(str(finding.details.get("subject", "")))
    return " ".join(parts).lower()


def classify(finding: Finding) -> Risk:
    """Place one finding (see the module docstring for the reasoning)."""
    text = _haystack(finding)
    rule = next((r for r in RULES if any(k in text for k in r.keywords)), None)
    feature = rule.feature if rule else "general"
    if finding.code in LOAD_TIME_CODES:
        return Risk(
            finding,
            SMOKE,
            feature,
            "plugin import / patch application, before vLLM builds an engine",
            f"{finding.code} fails when the plugin module is imported or its patch is applied",
        )
    if rule is None:
        return Risk(
            finding,
            CPU,
            feature,
            "the first call of the patched code",
            f"{finding.code} has no runtime target the rules recognise; "
            "unit tests of the file are the first place it can show",
        )
    return Risk(
        finding,
        rule.phase,
        feature,
        rule.step,
        f"{finding.code} touches {', '.join(k for k in rule.keywords if k in text)}",
    )
