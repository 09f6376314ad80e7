"""Full CUDA graphs by default for the speculating engines the plugin runs.

vLLM 0.26.0's default ``cudagraph_mode`` is ``FULL_AND_PIECEWISE``: full graphs
only for *uniform decode* steps, where every request carries ``1 + k`` tokens
(``GPUModelRunner._is_uniform_decode``; keys in ``CudagraphDispatcher``). Every
other step replays the piecewise graphs, which run attention eagerly between
graph pieces. With the Arctic speculator under ``disable_by_batch_size``, with
suffix decoding (whose drafts vary in length) and with the hybrid, most steps
are not uniform in that sense: a capped batch of 32 carries one token per
request, a suffix step 1 to 1 + k. Such an engine therefore replays piecewise
graphs on almost every step, while the same engine without speculation replays
full ones; on a host-bound model that was the whole gap to no speculation.

``cudagraph_mode=FULL`` captures full graphs for any batch up to the largest
capture size. :class:`VllmConfigSpecGraphsPatch` picks it for an engine whose
speculative method is ``arctic`` or ``suffix`` when the user left the mode
unset and vLLM would have chosen ``FULL_AND_PIECEWISE``. It is safe to ask for:
on an attention backend without full graphs for mixed batches
(``AttentionCGSupport`` below ``ALWAYS``), vLLM's own resolution
(``CompilationConfig.resolve_cudagraph_mode_and_sizes``) falls back to
``FULL_AND_PIECEWISE``, the mode it would have used anyway.

It stays out of the way of features that need piecewise graphs: vLLM's cascade
attention and Forest Cascade Attention run their grouped steps outside full
graphs, and sequence parallelism has its own graph rules. An explicit
``cudagraph_mode`` (e.g. ``FULL_AND_PIECEWISE`` to get vLLM's behaviour back)
always wins.
"""

from __future__ import annotations

from typing import Any

from vllm.config import CUDAGraphMode, VllmConfig
from vllm.logger import init_logger

from arctic_inference.patching import ArcticPatch

logger = init_logger(f"vllm.{__name__}")

# Speculative methods whose steps are mostly not uniform 1 + k decodes.
FULL_GRAPH_METHODS = ("arctic", "suffix")


def _level_default(vllm_config: Any) -> Any:
    """The ``cudagraph_mode`` vLLM's optimisation level would fill in."""
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG

    level = getattr(vllm_config, "optimization_level", None)
    defaults = OPTIMIZATION_LEVEL_TO_CONFIG.get(level, {})
    return defaults.get("compilation_config", {}).get("cudagraph_mode")


def full_graphs_blocker(vllm_config: Any) -> str | None:
    """Why this engine keeps vLLM's graph mode, or None when it gets full graphs.

    Pure: reads the config as the user built it, before vLLM fills in defaults.
    """
    spec = getattr(vllm_config, "speculative_config", None)
    method = getattr(spec, "method", None)
    if method not in FULL_GRAPH_METHODS:
        return f"speculative method {method!r} is not one of {FULL_GRAPH_METHODS}"
    compilation = vllm_config.compilation_config
    if compilation.cudagraph_mode is not None:
        return f"cudagraph_mode={compilation.cudagraph_mode.name} was set by the user"
    if _level_default(vllm_config) != CUDAGraphMode.FULL_AND_PIECEWISE:
        return "the optimisation level does not default to FULL_AND_PIECEWISE"
    model = getattr(vllm_config, "model_config", None)
    if model is None:
        return "no model config"
    if model.enforce_eager:
        return "enforce_eager is set"
    if not model.disable_cascade_attn:
        return "vLLM's cascade attention is on (its steps need piecewise graphs)"
    from arctic_inference.vllm.attention.forest_config import forest_config_for
    from arctic_inference.vllm.ulysses.sp_args import sp_size

    if forest_config_for(vllm_config) is not None:
        return "Forest Cascade Attention is on (its grouped steps need piecewise graphs)"
    if sp_size(vllm_config) > 1:
        return "sequence parallelism sets its own graph mode"
    return None


class VllmConfigSpecGraphsPatch(ArcticPatch[VllmConfig]):
    """Ask for full CUDA graphs for an arctic or suffix engine left at vLLM's default."""

    _orig___post_init__ = VllmConfig.__post_init__

    def __post_init__(self):
        if full_graphs_blocker(self) is None:
            self.compilation_config.cudagraph_mode = CUDAGraphMode.FULL
            logger.info(
                "speculative method %r: cudagraph_mode=FULL (full graphs for steps whose "
                "requests draft different lengths or none); set cudagraph_mode="
                "FULL_AND_PIECEWISE to keep vLLM's default",
                self.speculative_config.method,
            )
        return VllmConfigSpecGraphsPatch._orig___post_init__(self)
