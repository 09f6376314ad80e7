"""Forest's step counters read from the engine core's process.

With vLLM's default engine layout (``VLLM_ENABLE_V1_MULTIPROCESSING=1``) the model runner
and the forest planners live in the engine core's process, not in the process that calls
``LLM.generate``; their counters (``planner.STATS``) are read there through
``LLM.collective_rpc("forest_stats")``, which vLLM routes to this class once it is the
engine's ``worker_extension_cls``.
"""

from __future__ import annotations


class ForestStatsExtension:
    """Mixed into vLLM's worker class by ``worker_extension_cls``."""

    def forest_stats(self) -> dict[str, int]:
        from arctic_inference.vllm.attention.planner import STATS

        return dict(STATS)
