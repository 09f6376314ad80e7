"""Worker-side patches that run a step in the SP layout (applied only when SP > 1).

* ``initialize_model_parallel``: vLLM is asked for TP = SP x TP, which gives
  the right PP, DP and EP groups for the DP x PP x SP x TP world
  (:mod:`.layout`); then the SP groups, the SP layout's TP groups and the
  folded groups are built from :class:`~.layout.ParallelLayout`, and the TP
  group vLLM hands to its layers becomes the SP layout's.
* ``Attention``: built with ``heads / SP`` query and KV heads (so the backend
  and the KV cache are sized for what the rank holds after the all-to-all);
  in an SP step its forward is wrapped in :class:`~.all_to_all.UlyssesExchange`.
* ``GPUModelRunner.load_model``: puts the SP layout's token split into the
  loaded model's forward (:mod:`.model_split`), under vLLM's CUDA-graph
  wrapper, and with shift parallelism prebuilds the folded layout
  (:class:`~.folded_model.FoldedModel`), so a bad model is refused at
  start-up, not at its first small step.
* ``GPUModelRunner.execute_model`` and ``_dummy_run`` (warm-up, profiling and
  CUDA-graph capture): each is one scope of :class:`~.step_layout.StepLayouts`,
  a capturing one when the dummy run captures a graph.
* ``GPUModelRunner._determine_batch_execution_and_padding``: where vLLM pads
  the batch and picks its CUDA graph, for a step and a capture alike; the
  layout of the padded batch (:func:`~.shift.batch_mode`) is installed there
  for the rest of the scope: vLLM's TP group (:func:`.groups.step`) and, in a
  FOLDED step, the folded weight views.

Each patched method reads the config of the object it runs for and does what
vLLM does when that config has SP = 1 (several engines may share a process).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from vllm.config import CUDAGraphMode, get_current_vllm_config
from vllm.distributed import parallel_state
from vllm.model_executor.layers.attention.attention import Attention
from vllm.v1.attention.backend import AttentionType
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from arctic_inference.patching import ArcticPatch
from arctic_inference.vllm.ulysses import groups
from arctic_inference.vllm.ulysses.all_to_all import UlyssesExchange
from arctic_inference.vllm.ulysses.folded_model import FoldedModel, position_of
from arctic_inference.vllm.ulysses.layout import ParallelLayout
from arctic_inference.vllm.ulysses.model_split import install_token_split
from arctic_inference.vllm.ulysses.shift import StepMode
from arctic_inference.vllm.ulysses.sp_args import shift_settings, sp_size
from arctic_inference.vllm.ulysses.step_layout import StepLayouts


def build_groups(layout: ParallelLayout, backend: str | None) -> groups.SequenceParallelGroups:
    """Create this worker's SP, TP and folded groups (every rank creates every group)."""
    local_rank = parallel_state.get_world_group().local_rank
    make = parallel_state.init_model_parallel_group

    def lists(group_ranks: list[tuple[int, ...]]) -> list[list[int]]:
        return [list(g) for g in group_ranks]  # vLLM's own form: lists of ranks

    return groups.SequenceParallelGroups(
        layout=layout,
        sp=make(lists(layout.sp_groups()), local_rank, backend, group_name="arctic_sp"),
        tp=make(
            lists(layout.tp_groups()),
            local_rank,
            backend,
            use_message_queue_broadcaster=True,
            group_name="tp",
        ),
        folded=make(
            lists(layout.folded_tp_groups()),
            local_rank,
            backend,
            use_message_queue_broadcaster=True,
            group_name="arctic_folded_tp",
        ),
    )


class ParallelStateSPPatch(ArcticPatch[parallel_state]):
    """Build vLLM's groups for a world with SP, then the SP groups on top."""

    _orig_initialize_model_parallel = parallel_state.initialize_model_parallel

    def initialize_model_parallel(
        tensor_model_parallel_size: int = 1,
        pipeline_model_parallel_size: int = 1,
        prefill_context_model_parallel_size: int = 1,
        decode_context_model_parallel_size: int | None = 1,
        backend: str | None = None,
    ) -> None:
        config = get_current_vllm_config()
        sp = sp_size(config)
        if sp == 1:
            ParallelStateSPPatch._orig_initialize_model_parallel(
                tensor_model_parallel_size,
                pipeline_model_parallel_size,
                prefill_context_model_parallel_size,
                decode_context_model_parallel_size,
                backend,
            )
            return
        layout = ParallelLayout(
            dp=config.parallel_config.data_parallel_size,
            pp=pipeline_model_parallel_size,
            sp=sp,
            tp=tensor_model_parallel_size,
        )
        world = torch.distributed.get_world_size()
        if world != layout.world_size:
            raise RuntimeError(
                f"the distributed world has {world} ranks but DP x PP x SP x TP = "
                f"{layout.dp} x {layout.pp} x {layout.sp} x {layout.tp} = {layout.world_size}."
            )
        ParallelStateSPPatch._orig_initialize_model_parallel(
            sp * tensor_model_parallel_size,
            pipeline_model_parallel_size,
            prefill_context_model_parallel_size,
            decode_context_model_parallel_size,
            backend,
        )
        built = build_groups(layout, backend)
        # vLLM's own TP group of this call is the SP x TP block in world order; the
        # folded group replaces it (TP-major order), the SP layout's TP group is
        # what vLLM's layers get outside FOLDED steps.
        parallel_state._TP = built.tp
        groups.install(built)


# rebasekit: ignore[RK401] pixtral.Attention is its vision encoder's own layer, run on image patches outside the token split
class AttentionSPPatch(ArcticPatch[Attention]):
    """Attention over ``heads / SP`` heads, wrapped in the two all-to-alls."""

    _orig___init__ = Attention.__init__
    _orig_forward = Attention.forward

    def __init__(
        self,
        num_heads: int,
        head_size: int,
        scale: float,
        num_kv_heads: int | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        sp = sp_size(get_current_vllm_config())
        kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        decoder = kwargs.get("attn_type", AttentionType.DECODER) == AttentionType.DECODER
        exchange = None
        if sp > 1 and decoder:
            exchange = UlyssesExchange(sp, num_heads, kv_heads, head_size, group=None)
            num_heads, kv_heads = num_heads // sp, max(1, kv_heads // sp)
        AttentionSPPatch._orig___init__(
            self, num_heads, head_size, scale, kv_heads, *args, **kwargs
        )
        self._arctic_ulysses = exchange

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        output_shape: torch.Size | None = None,
        output_dtype: torch.dtype | None = None,
    ) -> torch.Tensor:
        exchange = getattr(self, "_arctic_ulysses", None)
        sp_groups = groups.current()
        if exchange is None or sp_groups is None or sp_groups.mode is not StepMode.SP:
            return AttentionSPPatch._orig_forward(
                self, query, key, value, output_shape, output_dtype
            )
        if output_shape is not None:
            raise NotImplementedError(
                "sequence parallelism supports attention whose output has the query's shape."
            )
        exchange.group = sp_groups.sp.device_group

        def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            tokens = q.shape[0]
            out = AttentionSPPatch._orig_forward(
                self,
                q.reshape(tokens, -1),
                k.reshape(tokens, -1),
                v.reshape(tokens, -1),
                None,
                output_dtype,
            )
            return out.reshape(tokens, q.shape[1], -1)

        return exchange(query, key, value, attend)


# rebasekit: ignore[RK401] the plugin forces the V1 runner (runner_choice.force_v1_model_runner)
class ModelRunnerSPPatch(ArcticPatch[GPUModelRunner]):
    """Run each step, and each capture, in the layout of its padded batch."""

    _orig_load_model = GPUModelRunner.load_model
    _orig_execute_model = GPUModelRunner.execute_model
    _orig__dummy_run = GPUModelRunner._dummy_run
    _orig__determine_batch_execution_and_padding = (
        GPUModelRunner._determine_batch_execution_and_padding
    )

    def load_model(self, load_dummy_weights: bool = False) -> None:
        ModelRunnerSPPatch._orig_load_model(self, load_dummy_weights)
        sp_groups = groups.current()
        if sp_groups is None:
            return
        model = self.get_model()  # under vLLM's CUDA-graph wrapper, if any
        install_token_split(model)
        settings = shift_settings(self.vllm_config)
        folded = FoldedModel(model, position_of(sp_groups)) if settings.enabled else None
        self._arctic_layouts = StepLayouts(settings, folded)

    def execute_model(self, scheduler_output: Any, intermediate_tensors: Any = None) -> Any:
        layouts: StepLayouts | None = getattr(self, "_arctic_layouts", None)
        if layouts is None:
            return ModelRunnerSPPatch._orig_execute_model(
                self, scheduler_output, intermediate_tensors
            )
        _check_folded_model(self, layouts)
        with layouts.scope():
            return ModelRunnerSPPatch._orig_execute_model(
                self, scheduler_output, intermediate_tensors
            )

    def _dummy_run(self, num_tokens: int, *args: Any, **kwargs: Any) -> Any:
        layouts: StepLayouts | None = getattr(self, "_arctic_layouts", None)
        if layouts is None:
            return ModelRunnerSPPatch._orig__dummy_run(self, num_tokens, *args, **kwargs)
        _check_folded_model(self, layouts)
        call = _DUMMY_RUN.bind(self, num_tokens, *args, **kwargs)
        with layouts.scope(capturing=bool(call.arguments.get("is_graph_capturing", False))):
            return ModelRunnerSPPatch._orig__dummy_run(self, num_tokens, *args, **kwargs)

    def _determine_batch_execution_and_padding(
        self,
        num_tokens: int,
        num_reqs: int,
        num_scheduled_tokens_np: Any,
        max_num_scheduled_tokens: int,
        use_cascade_attn: bool,
        allow_microbatching: bool = True,
        force_eager: bool = False,
        force_uniform_decode: bool | None = None,
        force_has_lora: bool | None = None,
        force_num_active_loras: int | None = None,
        num_encoder_reqs: int = 0,
    ) -> Any:
        result = ModelRunnerSPPatch._orig__determine_batch_execution_and_padding(
            self,
            num_tokens,
            num_reqs,
            num_scheduled_tokens_np,
            max_num_scheduled_tokens,
            use_cascade_attn,
            allow_microbatching,
            force_eager,
            force_uniform_decode,
            force_has_lora,
            force_num_active_loras,
            num_encoder_reqs,
        )
        layouts: StepLayouts | None = getattr(self, "_arctic_layouts", None)
        if layouts is None:
            return result
        cudagraph_mode, batch_descriptor = result[0], result[1]
        if cudagraph_mode == CUDAGraphMode.PIECEWISE:
            raise RuntimeError(
                "sequence parallelism captures full CUDA graphs only; a piecewise graph "
                "would split the model around the all-to-alls. Use cudagraph_mode "
                "FULL or FULL_DECODE_ONLY with compilation mode NONE, or --enforce-eager."
            )
        layouts.enter(batch_descriptor)
        return result


_DUMMY_RUN = inspect.signature(GPUModelRunner._dummy_run)


def _check_folded_model(runner: Any, layouts: StepLayouts) -> None:
    """A FOLDED step must switch the model being run (a reloaded model is a new one)."""
    if layouts.folded is not None and layouts.folded.model is not runner.get_model():
        raise RuntimeError(
            "a FOLDED step needs the folded layout of the model being run; "
            "load_model builds it when shift parallelism is on."
        )
