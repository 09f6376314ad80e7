"""The engine-side patches on the real vLLM classes: a bad config is refused while
vLLM builds it, and a good one gets PP x SP x TP workers from the real executors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.vllm

from vllm.v1.executor.abstract import Executor  # noqa: E402
from vllm.v1.executor.multiproc_executor import MultiprocExecutor  # noqa: E402

from arctic_inference.vllm.patch_set import ENGINE_FEATURES  # noqa: E402
from arctic_inference.vllm.ulysses.engine_patches import (  # noqa: E402
    ExecutorClassPatch,
    MultiprocSizesPatch,
)
from arctic_inference.vllm.ulysses.sp_args import ARGS  # noqa: E402

Build = Callable[..., Any]


@pytest.fixture
def patched(reverted_patches: None) -> None:
    ExecutorClassPatch.apply()
    MultiprocSizesPatch.apply()


def test_the_feature_lists_these_patches_and_args() -> None:
    (feature,) = [f for f in ENGINE_FEATURES if f.name == "ulysses-engine"]
    assert feature.patches == (
        "arctic_inference.vllm.ulysses.engine_patches:ExecutorClassPatch",
        "arctic_inference.vllm.ulysses.engine_patches:MultiprocSizesPatch",
    )
    assert feature.args == ARGS


def test_sp_config_gets_its_world_and_the_multiproc_executor(
    patched: None, build_config: Build
) -> None:
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2})
    # vLLM itself called the patched get_class while building the config.
    assert config.parallel_config.world_size == 2
    assert config.parallel_config.distributed_executor_backend == "mp"
    assert Executor.get_class(config) is MultiprocExecutor
    assert config.parallel_config.world_size == 2  # idempotent


def test_sp_times_tp_workers(patched: None, build_config: Build) -> None:
    config = build_config(arctic={"ulysses_sequence_parallel_size": 2}, tensor_parallel_size=2)
    assert config.parallel_config.world_size == 4
    executor = MultiprocExecutor.__new__(MultiprocExecutor)  # sizes only: no workers
    executor.vllm_config = config
    executor.parallel_config = config.parallel_config
    tp_size, pp_size, pcp_size = executor._get_parallel_sizes()
    assert (tp_size, pp_size, pcp_size) == (4, 1, 1)
    assert executor.world_size == tp_size * pp_size * pcp_size  # the executor's own check


def test_sp_off_leaves_vllm_as_it_was(patched: None, build_config: Build) -> None:
    config = build_config()
    assert config.parallel_config.world_size == 1
    assert config.parallel_config.distributed_executor_backend == "uni"
    executor = MultiprocExecutor.__new__(MultiprocExecutor)
    executor.vllm_config = config
    executor.parallel_config = config.parallel_config
    assert executor._get_parallel_sizes() == (1, 1, 1)


def test_bad_config_is_refused_while_vllm_builds_it(patched: None, build_config: Build) -> None:
    with pytest.raises(ValueError, match="--enable-shift-parallel needs"):
        build_config(arctic={"enable_shift_parallel": True})


def _settle_graph_sizes(config: Any, sizes: list[int]) -> None:
    """What a CUDA platform leaves in the config (the CPU one turns graphs off)."""
    config.compilation_config.cudagraph_capture_sizes = list(sizes)
    config.compilation_config.max_cudagraph_capture_size = sizes[-1]


def test_the_engine_fits_the_graph_sizes_to_the_token_split(
    patched: None, build_config: Build
) -> None:
    config = build_config(
        arctic={
            "ulysses_sequence_parallel_size": 2,
            "enable_shift_parallel": True,
            "shift_parallel_threshold": 16,
        },
        enforce_eager=False,
        compilation={"mode": "NONE", "cudagraph_mode": "FULL"},
    )
    _settle_graph_sizes(config, [1, 2, 3, 8, 16, 17, 24, 33])
    assert Executor.get_class(config) is MultiprocExecutor  # the call that starts the engine
    # below 16 FOLDED, kept; from 16 the SP layout: multiples of 2
    assert config.compilation_config.cudagraph_capture_sizes == [1, 2, 3, 8, 16, 18, 24, 34]
    assert config.compilation_config.max_cudagraph_capture_size == 34
    Executor.get_class(config)
    assert config.compilation_config.cudagraph_capture_sizes == [1, 2, 3, 8, 16, 18, 24, 34]


def test_eager_and_sp_off_configs_keep_their_sizes(patched: None, build_config: Build) -> None:
    eager = build_config(arctic={"ulysses_sequence_parallel_size": 2})
    off = build_config(enforce_eager=False, compilation={"mode": "NONE", "cudagraph_mode": "FULL"})
    for config in (eager, off):
        _settle_graph_sizes(config, [1, 3, 5])
        Executor.get_class(config)
        assert config.compilation_config.cudagraph_capture_sizes == [1, 3, 5]
        assert config.compilation_config.max_cudagraph_capture_size == 5
