"""Run a speculator with its heads sharded over a 2-rank gloo TP group; rank 0 prints drafts.

Usage: python tp_worker.py CKPT PORT SEED   (started by test_tp_cpu.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.multiprocessing as mp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def rank_main(rank: int, ckpt: str, port: int, seed: int, out: str) -> None:
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    from arctic_inference.vllm.spec_dec.registration import register_speculators
    from tests.spec_dec.conftest import HIDDEN, VOCAB, build_speculator

    register_speculators()
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        init_distributed_environment(
            world_size=2,
            rank=rank,
            local_rank=rank,
            distributed_init_method=f"tcp://127.0.0.1:{port}",
            backend="gloo",
        )
        initialize_model_parallel(2, 1)
    model, loaded = build_speculator(Path(ckpt))
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (9,), generator=g)
    hidden = torch.randn(9, HIDDEN, generator=g) * 3
    with torch.inference_mode():
        drafts = model.generate_proposals(ids, hidden, 3)
    shard = model.head[0].shard_indices
    # The cost rule's choice must be the same on every rank: rank 0's, whatever the others'.
    from vllm.distributed import get_tp_group

    from arctic_inference.vllm.spec_dec.proposer import shared_choice

    mine = [shared_choice(int(rank == 1), get_tp_group(), torch.device("cpu")),
            shared_choice(int(rank == 0), get_tp_group(), torch.device("cpu"))]  # fmt: skip
    choices: list = [None, None]
    torch.distributed.all_gather_object(choices, mine)
    if rank == 0:
        Path(out).write_text(
            json.dumps(
                {
                    "drafts": drafts.tolist(),
                    "tp": model.tp_size,
                    "all_loaded": loaded == set(dict(model.named_parameters())),
                    "rows": model.head[0].weight.shape[0],
                    "shard": [shard.org_vocab_start_index, shard.org_vocab_end_index],
                    "choices": choices,
                }
            )
        )
    # Both ranks leave together, with the groups torn down: a rank exiting while gloo's
    # threads still serve the other one aborts the process ("terminate called ...").
    from vllm.distributed import destroy_distributed_environment, destroy_model_parallel

    torch.distributed.barrier()
    destroy_model_parallel()
    destroy_distributed_environment()


if __name__ == "__main__":
    ckpt, port, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    mp.spawn(rank_main, args=(ckpt, port, seed, out), nprocs=2, join=True)
