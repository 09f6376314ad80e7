"""The Arctic Inference patch set: every feature, in the order it is applied.

Two ordered lists, one per place a patch must be installed:

* ``ENGINE_FEATURES`` are applied when the plugin loads, in every process
  vLLM loads plugins in (front end, engine core, workers). They may import
  vLLM's engine/front-end modules but nothing that touches the GPU.
* ``WORKER_FEATURES`` are applied inside each worker, right before the worker
  object exists (see :mod:`arctic_inference.vllm.worker_hook`), so model
  runner modules are only imported where the GPU is used, after fork/spawn.

Lists are applied front to back; entries later in a list wrap what earlier
entries installed, so foundation entries come first. (A feature switched on
only by a later engine is applied after features already in, so two features
that wrap the *same* attribute must share their ``enabled`` predicate.) Adding a feature is one
``Feature(...)`` entry in the right list: its patch classes are named by import
path (imported only when applied), its ``ArcticArg`` knobs are registered at
plugin load on both sides (so ``vllm serve --help`` always lists them), and
``enabled`` decides whether its patches are needed in this process (below).

``enabled`` receives a :class:`PatchContext`. On the worker side it carries
the real ``VllmConfig`` so a predicate can read Arctic values
(``ctx.arctic("fp32_lm_head")``). On the engine side the config does not exist
yet (CLI flags are parsed after plugins load), so engine predicates may only
use environment switches; gate engine behaviour on config values at runtime.

Several engines in one process (design decision): patches go into vLLM's
classes, so they are process-wide and stay in once applied, while each
``LLM(...)`` in the process has its own config and may set a knob
differently. Two rules make that correct:

1. ``enabled`` is re-evaluated for every engine (every ``WorkerBase.__init__``
   calls :func:`apply_side` with its own config). A feature the first engine
   did not want is applied when a later engine turns it on; a feature already
   in stays in (taking it out would break the engine that needs it).
2. Therefore a feature's patched code must never assume "patched means on":
   it decides at run time from the config of the object it runs for (the
   fp32 LM head reads the knob of the config its ``LogitsProcessor`` was
   built under; keep-drafter reads ``Worker.vllm_config``; per-seq max tokens
   reads ``InputProcessor.vllm_config``). ``enabled`` is only an optimisation
   that keeps unused patches out of a process that never needs them.

A feature with a ``setup`` function runs it once per process, the first time
the feature is enabled.
"""

from __future__ import annotations

import dataclasses
import pkgutil
import threading
from collections.abc import Callable
from typing import Any, Literal

from vllm.logger import init_logger

from arctic_inference.patching import ArcticPatch, PatchRecord, applied_patches
from arctic_inference.vllm import rl_args
from arctic_inference.vllm.args import ArcticArg, arctic_value, register_arctic_arg
from arctic_inference.vllm.attention import forest_config
from arctic_inference.vllm.ulysses import sp_args

# Named under vLLM's own logger tree, the one vLLM configures: its handler, format and
# VLLM_LOGGING_LEVEL apply to the plugin's lines in every process.
logger = init_logger(f"vllm.{__name__}")

Side = Literal["engine", "worker"]


@dataclasses.dataclass(frozen=True)
class PatchContext:
    """What an ``enabled`` predicate or ``setup`` function may look at."""

    side: Side
    vllm_config: Any | None = None

    def arctic(self, name: str) -> Any:
        """Resolved value of a registered Arctic arg for this config."""
        return arctic_value(self.vllm_config, name)


def always(ctx: PatchContext) -> bool:
    """Default predicate: the feature is part of every enabled plugin."""
    return True


def _arctic_on(ctx: PatchContext) -> bool:
    # Imported lazily: the predicate's module imports vLLM's config classes.
    from arctic_inference.vllm.spec_dec.spec_config import arctic_on

    return arctic_on(ctx)


@dataclasses.dataclass(frozen=True)
class Feature:
    """One feature of the patch set.

    ``patches``: ``"package.module:PatchClass"`` paths, applied in order.
    ``setup``: optional ``"package.module:function"`` called with the
    :class:`PatchContext` after the patches (for work a class copy cannot do).
    ``args``: Arctic engine args the feature reads.
    """

    name: str
    summary: str
    patches: tuple[str, ...] = ()
    setup: str | None = None
    args: tuple[ArcticArg, ...] = ()
    enabled: Callable[[PatchContext], bool] = always


ENGINE_FEATURES: tuple[Feature, ...] = (
    # --- foundation (keep first) ---
    Feature(
        name="engine-args",
        summary="Arctic CLI flags; values land in additional_config['arctic']",
        patches=("arctic_inference.vllm.args_patch:EngineArgsPatch",),
    ),
    Feature(
        name="worker-bootstrap",
        summary="apply WORKER_FEATURES inside each worker before it is built",
        patches=("arctic_inference.vllm.worker_hook:WorkerBasePatch",),
    ),
    Feature(
        name="engine-runtime-check",
        summary="fail if the engine core or scheduler bypasses the patches",
        patches=("arctic_inference.vllm.runtime_check:EngineCorePatch",),
    ),
    # --- features ---
    Feature(
        name="per-seq-max-tokens",
        summary="rollout replay: per-sample max_tokens for n>1 from extra_args "
        "(knob checked at run time: serve flags are parsed after plugin load)",
        patches=(
            "arctic_inference.vllm.per_seq_max_tokens:SamplingParamsPerSeqPatch",
            "arctic_inference.vllm.per_seq_max_tokens:InputProcessorPerSeqPatch",
            "arctic_inference.vllm.per_seq_max_tokens:ParentRequestPerSeqPatch",
        ),
        args=(rl_args.PER_SEQ_MAX_TOKENS,),
    ),
    Feature(
        name="swiftkv",
        summary="register the llama_swiftkv config (AutoConfig) and "
        "LlamaSwiftKVForCausalLM (ModelRegistry); refuse prompt logprobs for it",
        patches=("arctic_inference.vllm.swiftkv.request_check:InputProcessorSwiftKVPatch",),
        setup="arctic_inference.vllm.swiftkv.registration:register_swiftkv",
    ),
    Feature(
        name="arctic-speculative-config",
        summary='speculative_config method="arctic" (and its suffix hybrid, '
        "disable_by_batch_size, disable_by_cost) accepted and validated by SpeculativeConfig",
        patches=("arctic_inference.vllm.spec_dec.spec_config:SpeculativeConfigArcticPatch",),
        setup="arctic_inference.vllm.spec_dec.spec_config:extend_speculative_config",
    ),
    Feature(
        name="spec-decode-full-graphs",
        summary='full CUDA graphs (cudagraph_mode=FULL) for method="arctic" or "suffix" '
        "engines left at vLLM's default, so steps with uneven or no drafts skip the "
        "piecewise graphs (decided per config)",
        patches=("arctic_inference.vllm.spec_dec.graph_mode:VllmConfigSpecGraphsPatch",),
    ),
    Feature(
        name="spec-decode-position-stats",
        summary="per-position acceptance logged over the drafts reaching each position "
        "(right when draft lengths vary: suffix, hybrid)",
        patches=("arctic_inference.vllm.spec_dec.stats:SpecDecodingLoggingPatch",),
    ),
    Feature(
        name="arctic-speculator-models",
        summary="register the Arctic MLP/LSTM speculator architectures (ModelRegistry)",
        setup="arctic_inference.vllm.spec_dec.registration:register_speculators",
    ),
    Feature(
        name="ulysses-engine",
        summary="sequence/shift parallelism: config refused before GPU work when invalid, "
        "executor sized for PP x SP x TP workers (no-op unless SP > 1, checked per config)",
        patches=(
            "arctic_inference.vllm.ulysses.engine_patches:ExecutorClassPatch",
            "arctic_inference.vllm.ulysses.engine_patches:MultiprocSizesPatch",
        ),
        args=sp_args.ARGS,
    ),
)

WORKER_FEATURES: tuple[Feature, ...] = (
    # --- foundation (keep first) ---
    Feature(
        name="worker-runtime-check",
        summary="fail if the worker or model runner bypasses the patches; log banner",
        patches=("arctic_inference.vllm.worker_check:WorkerPatch",),
    ),
    # --- features ---
    Feature(
        name="fp32-lm-head",
        summary="LM-head projection (logits and greedy argmax) in fp32, no fp32 weight copy",
        patches=("arctic_inference.vllm.fp32_lm_head:FP32LMHeadPatch",),
        args=(rl_args.FP32_LM_HEAD,),
        enabled=rl_args.fp32_lm_head_on,
    ),
    Feature(
        name="sleep-keep-drafter",
        summary="level-2 sleep saves the drafter to host memory; wake_up restores it",
        patches=("arctic_inference.vllm.sleep_drafter:WorkerSleepKeepDrafterPatch",),
        args=(rl_args.SLEEP_KEEP_DRAFTER,),
        enabled=rl_args.sleep_keep_drafter_on,
    ),
    Feature(
        name="flash-attn-fork",
        summary="FLASH_ATTN replaced by the declared fork (ForestFlashAttentionBackend); "
        "upstream's code path unless a forest config is given",
        patches=("arctic_inference.vllm.attention.install:ForestBackendSelectionPatch",),
    ),
    Feature(
        name="forest-cascade-attn",
        summary="Forest Cascade Attention in the fork: each prefix group's shared blocks "
        "read once; grouped steps run piecewise graphs, others keep full graphs "
        "(host block tables recorded only with a forest config)",
        patches=(
            "arctic_inference.vllm.attention.host_tables:BlockTableHostPatch",
            "arctic_inference.vllm.attention.dispatch:ForestStepDispatchPatch",
        ),
        args=(forest_config.FOREST_CASCADE_ATTN_CONFIGS,),
        enabled=forest_config.forest_on,
    ),
    Feature(
        name="arctic-proposer",
        summary='the arctic proposer drafts in GPUModelRunner for method="arctic" (and '
        "hybrid), only while drafting pays (disable_by_cost); disable_by_batch_size for "
        'method="suffix"',
        patches=("arctic_inference.vllm.spec_dec.runner:GPUModelRunnerArcticPatch",),
        enabled=_arctic_on,
    ),
    Feature(
        name="ulysses-worker",
        summary="sequence parallelism in the worker: SP/TP/folded groups, attention over "
        "heads/SP between two all-to-alls, each rank runs its block of the step's tokens",
        patches=(
            "arctic_inference.vllm.ulysses.worker_patches:ParallelStateSPPatch",
            "arctic_inference.vllm.ulysses.worker_patches:AttentionSPPatch",
            "arctic_inference.vllm.ulysses.worker_patches:ModelRunnerSPPatch",
        ),
        enabled=sp_args.ulysses_on,
    ),
)

_FEATURES: dict[Side, tuple[Feature, ...]] = {
    "engine": ENGINE_FEATURES,
    "worker": WORKER_FEATURES,
}

_lock = threading.RLock()
# Features whose setup function has run in this process, per side.
_setup_done: dict[Side, set[str]] = {"engine": set(), "worker": set()}


def register_feature_args() -> None:
    """Register the Arctic args of every feature (both sides)."""
    for feature in ENGINE_FEATURES + WORKER_FEATURES:
        for arg in feature.args:
            register_arctic_arg(arg)


def load_patch_class(path: str, feature: Feature) -> type[ArcticPatch]:
    """Import a patch class named in ``feature``; a wrong path fails clearly."""
    try:
        patch = pkgutil.resolve_name(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise RuntimeError(
            f"Arctic feature {feature.name!r} names patch {path!r}, which cannot be imported: {exc}"
        ) from exc
    if not (isinstance(patch, type) and issubclass(patch, ArcticPatch)):
        raise RuntimeError(
            f"Arctic feature {feature.name!r} names {path!r}, which is not an ArcticPatch subclass."
        )
    return patch


def _patch_key(path: str) -> tuple[str, str]:
    module, _, qualname = path.partition(":")
    return module, qualname


def feature_is_applied(feature: Feature, side: Side) -> bool:
    """Whether all of the feature's patches (and its setup) are in this process.

    Read from the patch registry without importing anything, so a reverted
    patch (tests) counts as not applied.
    """
    applied = {(r.patch_module, r.patch) for r in applied_patches()}
    if not all(_patch_key(path) in applied for path in feature.patches):
        return False
    return feature.setup is None or feature.name in _setup_done[side]


def apply_feature(feature: Feature, ctx: PatchContext) -> list[PatchRecord]:
    """Apply one feature's patches (idempotent) and, once per process, its setup."""
    records = [load_patch_class(path, feature).apply() for path in feature.patches]
    if feature.setup is not None and feature.name not in _setup_done[ctx.side]:
        setup = pkgutil.resolve_name(feature.setup)
        if not callable(setup):
            raise RuntimeError(
                f"Arctic feature {feature.name!r}: setup {feature.setup!r} is not callable."
            )
        setup(ctx)
        _setup_done[ctx.side].add(feature.name)
    return records


def enabled_features(side: Side, vllm_config: Any | None = None) -> tuple[str, ...]:
    """Names of the features of ``side`` that this config switches on."""
    ctx = PatchContext(side=side, vllm_config=vllm_config)
    return tuple(f.name for f in _FEATURES[side] if f.enabled(ctx))


def apply_side(side: Side, vllm_config: Any | None = None) -> tuple[str, ...]:
    """Apply what this config enables on ``side`` and is not in yet; return its features.

    Called per engine (see the module docstring): the return value is the
    features enabled for *this* config, all of which are applied afterwards.
    Features applied for earlier configs stay applied.
    """
    with _lock:
        ctx = PatchContext(side=side, vllm_config=vllm_config)
        enabled = []
        for feature in _FEATURES[side]:
            if not feature.enabled(ctx):
                logger.debug("Arctic feature %s is off for this config", feature.name)
                continue
            enabled.append(feature.name)
            if feature_is_applied(feature, side):
                continue
            for record in apply_feature(feature, ctx):
                logger.debug("Arctic patch applied: %s", record.describe())
        return tuple(enabled)


def applied_features(side: Side) -> tuple[str, ...]:
    """Features of ``side`` whose patches are in this process (any config)."""
    with _lock:
        return tuple(f.name for f in _FEATURES[side] if feature_is_applied(f, side))
