"""Engine-side patches: check the config and size the executor for SP x TP workers.

Both run in the front end or engine core, before any worker (and so any GPU
work) exists. They are installed whenever the plugin is on, because the
engine side loads plugins before vLLM has parsed the flags (see
``patch_set``); each call decides from the config it is given and does
nothing when ``ulysses_sequence_parallel_size`` is 1.

* ``Executor.get_class`` is where vLLM picks the executor for a built config,
  first from ``VllmConfig.__post_init__`` and again when the engine starts.
  The patch validates the config there (:func:`~.validate.check_config`),
  counts SP in ``ParallelConfig.world_size`` (vLLM counts PP x TP x PCP) and
  turns the single-process executor vLLM chose for a TP=1 config into the
  multiprocessing one, since SP alone needs several workers. With CUDA graphs
  it makes the sizes captured in the SP layout split over the SP ranks
  (:func:`fit_capture_sizes`).
* ``MultiprocExecutor._get_parallel_sizes`` feeds the executor's start-up
  check ``world_size == TP x PP x PCP``; with SP the workers of a stage are
  SP x TP, so the TP it reports is that product.
"""

from __future__ import annotations

from typing import Any

from vllm.v1.executor.abstract import Executor
from vllm.v1.executor.multiproc_executor import MultiprocExecutor

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.ulysses.shift import graph_capture_sizes
from arctic_inference.vllm.ulysses.sp_args import sp_size
from arctic_inference.vllm.ulysses.validate import SequenceParallelPlan, check_config


def prepare_engine_config(vllm_config: Any) -> SequenceParallelPlan | None:
    """Validate ``vllm_config``, size its world for SP and fit its CUDA-graph sizes
    to the token split (idempotent)."""
    plan = check_config(vllm_config)
    if plan is None:
        return None
    parallel = vllm_config.parallel_config
    parallel.world_size = plan.layout.engine_world_size
    if parallel.distributed_executor_backend in (None, "uni"):
        parallel.distributed_executor_backend = "mp"
    fit_capture_sizes(vllm_config, plan)
    return plan


def fit_capture_sizes(vllm_config: Any, plan: SequenceParallelPlan) -> None:
    """Make the sizes captured in the SP layout multiples of SP (:func:`graph_capture_sizes`).

    vLLM settles the sizes after its first ``get_class`` call, so they are fitted
    on the call that starts the engine, before any worker reads the config; with
    no sizes yet (or none at all, eager) there is nothing to fit.
    """
    compilation = vllm_config.compilation_config
    sizes = compilation.cudagraph_capture_sizes
    if vllm_config.model_config.enforce_eager or not sizes:
        return
    fitted = graph_capture_sizes(
        sizes, plan.layout.sp, plan.shift, vllm_config.scheduler_config.max_num_batched_tokens
    )
    if fitted == sorted(sizes):
        return
    compilation.cudagraph_capture_sizes = fitted
    if compilation.max_cudagraph_capture_size is not None:
        compilation.max_cudagraph_capture_size = fitted[-1] if fitted else 0


class ExecutorClassPatch(ArcticPatch[Executor]):
    """Validate SP configs and give them a world of PP x SP x TP workers."""

    _orig_get_class = Executor.get_class  # staticmethod: plain function

    @staticmethod
    def get_class(vllm_config: Any) -> type[Executor]:
        prepare_engine_config(vllm_config)
        return ExecutorClassPatch._orig_get_class(vllm_config)


class MultiprocSizesPatch(ArcticPatch[MultiprocExecutor]):
    """Report SP x TP workers per stage to the executor's world-size check."""

    _orig__get_parallel_sizes = MultiprocExecutor._get_parallel_sizes

    def _get_parallel_sizes(self) -> tuple[int, int, int]:
        tp_size, pp_size, pcp_size = MultiprocSizesPatch._orig__get_parallel_sizes(self)
        return tp_size * sp_size(self.vllm_config), pp_size, pcp_size
