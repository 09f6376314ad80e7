"""What each of two gloo ranks runs in the worker-patch test (spawned processes):
vLLM's real distributed set-up with the SP patch, then vLLM's own ``_model_forward``
of a model carrying the token split, in an SP and in a FOLDED step."""

from __future__ import annotations

import os
from pathlib import Path

import torch


class TinyModel(torch.nn.Module):
    """Per-token model (embedding, position mix, MLP): its output for a token does not
    depend on the other tokens, so a token split must reproduce it exactly."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []  # tokens each forward got
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(32, 8)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)
        )

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        self.seen.append(input_ids.shape[0])
        return self.mlp(self.embed(input_ids) + positions[:, None].float() / 10)


def run_rank(rank: int, port: int, folder: str, model_dir: str) -> None:
    os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    from arctic_inference.vllm.ulysses import groups
    from arctic_inference.vllm.ulysses.model_split import install_token_split
    from arctic_inference.vllm.ulysses.shift import StepMode
    from arctic_inference.vllm.ulysses.worker_patches import ParallelStateSPPatch

    ParallelStateSPPatch.apply()
    config = VllmConfig(
        model_config=ModelConfig(model=model_dir, skip_tokenizer_init=True, enforce_eager=True),
        device_config=DeviceConfig(device="cpu"),
        additional_config={"arctic": {"ulysses_sequence_parallel_size": 2}},
    )
    with set_current_vllm_config(config):
        parallel_state.init_distributed_environment(
            world_size=2,
            rank=rank,
            local_rank=rank,
            distributed_init_method=f"tcp://127.0.0.1:{port}",
            backend="gloo",
        )
        parallel_state.ensure_model_parallel_initialized(1, 1, backend="gloo")
        built = groups.current()
        runner = GPUModelRunner.__new__(GPUModelRunner)  # only _model_forward is run
        runner.model = TinyModel()
        hooks = install_token_split(runner.model)
        again = install_token_split(runner.model)
        ids = torch.tensor([3, 1, 4, 1, 5, 9, 2])  # 7 tokens: padded to 8, 4 per rank
        positions = torch.arange(7)
        with groups.step(StepMode.SP), torch.inference_mode():  # as vLLM runs models
            out = runner._model_forward(input_ids=ids, positions=positions)
        with groups.step(StepMode.FOLDED), torch.inference_mode():
            folded_out = runner._model_forward(input_ids=ids, positions=positions)
        with torch.inference_mode():  # outside a step: the SP layout, as loaded
            outside = runner._model_forward(input_ids=ids, positions=positions)
        result = {
            "out": out,
            "folded_out": folded_out,
            "outside": outside,
            "seen": runner.model.seen,
            "installed_once": hooks is again,
            "tp_size": parallel_state.get_tp_group().world_size,
            "sp_ranks": built.sp.ranks,
            "tp_ranks": built.tp.ranks,
            "folded_ranks": built.folded.ranks,
            "pp_ranks": parallel_state.get_pp_group().ranks,
        }
        with groups.step(StepMode.FOLDED):
            result["folded_tp_size"] = parallel_state.get_tp_group().world_size
        result["after_tp_size"] = parallel_state.get_tp_group().world_size
    torch.save(result, Path(folder) / f"rank{rank}.pt")
    parallel_state.destroy_model_parallel()
    parallel_state.destroy_distributed_environment()
