"""Host cost of forest planning per decode step: the first implementation against today's.

The planner runs on the host before every decode step, on its critical path. This
times, on the CPU, the three layers of it on realistic block tables:

- ``group``: ``find_prefix_groups`` on the rows the planner reads (a column slice of a
  real vLLM ``BlockTable``'s host buffer, as in the model runner);
- ``plan``: ``build_forest_plan`` for those groups (its torch ops run on CPU tensors
  here; on the GPU they are kernel launches and host-to-device copies);
- ``planner``: ``ForestPlanner.plan`` on a real ``CommonAttentionMetadata`` (eligibility,
  host rows, grouping and plan together).

``before`` is the loop-based first implementation (``tests/forest/planner_oracle.py``,
the oracle of the property tests); for ``planner`` it is swapped into the planner module
for the duration of its calls. Both run in one process, interleaved: per repetition
each implementation loops for at least ``--rep-s`` seconds, the order alternating
between repetitions. Reported per call: median [min, max] over ``--reps`` repetitions,
and the per-repetition ratio before / after. Torch runs on one thread: the machine's
cores are shared, and torch's intra-op threads on tensors this small measure contention.

    python bench/forest/planner_cpu.py --reps 5 --rep-s 1 --md bench/forest/PLANNER_CPU.md
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "forest"))
from planner_oracle import oracle_build_forest_plan, oracle_find_prefix_groups  # noqa: E402

from arctic_inference.vllm.attention import planner as planner_module  # noqa: E402
from arctic_inference.vllm.attention.forest_config import ForestConfig  # noqa: E402
from arctic_inference.vllm.attention.grouping import find_prefix_groups  # noqa: E402
from arctic_inference.vllm.attention.plan import build_forest_plan, host_index  # noqa: E402

BLOCK_SIZE = 16
MAX_BLOCKS_PER_REQ = 512  # the host buffer is wider than any row, as in the runner


@dataclasses.dataclass
class Request:
    blocks: list[int]  # physical ids of its allocated blocks
    computed: int  # tokens in the cache before this step's one query token


class BlockPool:
    """Physical block ids handed out in a shuffled order, 0 (vLLM's null block) never."""

    def __init__(self, rng: np.random.Generator, size: int = 1 << 16) -> None:
        self._ids = iter(rng.permutation(np.arange(1, size)).tolist())

    def take(self, count: int) -> list[int]:
        return [next(self._ids) for _ in range(count)]


def _family(
    pool: BlockPool, shared: list[int], samples: int, own_tokens: list[int]
) -> list[Request]:
    """``samples`` requests whose leading blocks are ``shared`` (full blocks only)."""
    out = []
    for s in range(samples):
        computed = len(shared) * BLOCK_SIZE + own_tokens[s]
        allocated = computed // BLOCK_SIZE + 1  # the block the next token goes to
        out.append(Request(shared + pool.take(allocated - len(shared)), computed))
    return out


def rollouts(rng: np.random.Generator) -> list[Request]:
    """8 prompts x 16 samples: 256 shared blocks, 16 own (the last step of 256 tokens)."""
    pool = BlockPool(rng)
    out = []
    for _ in range(8):
        out += _family(pool, pool.take(256), 16, [255] * 16)
    return out


def sysprompt(rng: np.random.Generator) -> list[Request]:
    """128 requests under one system prompt of 128 blocks, 13 own blocks each."""
    pool = BlockPool(rng)
    return _family(pool, pool.take(128), 128, [12 * BLOCK_SIZE + 8] * 128)


def noshare(rng: np.random.Generator) -> list[Request]:
    """64 distinct requests of 72 blocks (1024-token prompts, 128 new tokens)."""
    pool = BlockPool(rng)
    return [_family(pool, [], 1, [71 * BLOCK_SIZE + 8])[0] for _ in range(64)]


def mixed(rng: np.random.Generator) -> list[Request]:
    """128 requests of several arrivals, rows shuffled, lengths unequal.

    4 prompts x 8 samples (128 shared blocks, 2-9 own); 2 system prompts of 64 blocks,
    each under 3 questions of 20 blocks with 4 samples each (a two-level trie); 16
    prompts x 2 samples (50 shared blocks); 40 distinct requests of 20-120 blocks.
    """
    pool = BlockPool(rng)
    out = []
    for _ in range(4):
        out += _family(pool, pool.take(128), 8, rng.integers(32, 150, 8).tolist())
    for _ in range(2):
        system = pool.take(64)
        for _ in range(3):
            out += _family(pool, system + pool.take(20), 4, rng.integers(16, 90, 4).tolist())
    for _ in range(16):
        out += _family(pool, pool.take(50), 2, rng.integers(16, 60, 2).tolist())
    for _ in range(40):
        out += _family(pool, [], 1, [int(rng.integers(20, 120)) * BLOCK_SIZE])
    return [out[i] for i in rng.permutation(len(out))]


WORKLOADS: dict[str, Callable[[np.random.Generator], list[Request]]] = {
    "rollouts": rollouts,
    "sysprompt": sysprompt,
    "noshare": noshare,
    "mixed": mixed,
}


@dataclasses.dataclass
class Step:
    """One decode step's inputs, held by real vLLM objects."""

    common: object  # CommonAttentionMetadata
    table_cpu: np.ndarray  # the rows the planner groups
    computed: np.ndarray
    qsl: np.ndarray
    keep: object  # the BlockTable owning the buffers


def make_step(requests: list[Request]) -> Step:
    """The step's metadata over a real ``BlockTable`` that the planner finds on the host."""
    from vllm.v1.attention.backend import CommonAttentionMetadata
    from vllm.v1.worker.block_table import BlockTable

    from arctic_inference.vllm.attention.host_tables import BlockTableHostPatch

    if not getattr(make_step, "patched", False):
        BlockTableHostPatch.apply()  # as the plugin does in the model runner
        make_step.patched = True

    num_reqs = len(requests)
    table = BlockTable(
        block_size=BLOCK_SIZE,
        max_num_reqs=256,
        max_num_blocks_per_req=MAX_BLOCKS_PER_REQ,
        max_num_batched_tokens=8192,
        pin_memory=False,
        device=torch.device("cpu"),
        kernel_block_size=BLOCK_SIZE,
        cp_kv_cache_interleave_size=1,
    )
    for row, req in enumerate(requests):
        table.add_row(req.blocks, row)
    table.commit_block_table(num_reqs)
    computed = np.asarray([r.computed for r in requests], dtype=np.int64)
    qsl = torch.arange(num_reqs + 1, dtype=torch.int32)
    seq_lens = torch.from_numpy(computed + 1).int()
    common = CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl.clone(),
        seq_lens=seq_lens,
        num_reqs=num_reqs,
        num_actual_tokens=num_reqs,
        max_query_len=1,
        max_seq_len=int(seq_lens.max()),
        block_table_tensor=table.get_device_tensor(num_reqs),
        slot_mapping=torch.zeros(num_reqs, dtype=torch.int64),
        seq_lens_cpu_upper_bound=seq_lens.clone(),
    )
    # The planner's own slice: the longest computed prefix, in whole blocks.
    columns = int(computed.max()) // BLOCK_SIZE
    table_cpu = table.get_cpu_tensor().numpy()[:num_reqs, :columns]
    return Step(common, table_cpu, computed, qsl.numpy().astype(np.int64), table)


@contextlib.contextmanager
def planner_with(group_fn: Callable, plan_fn: Callable) -> Iterator[None]:
    """The planner module calling ``group_fn`` and ``plan_fn`` (restored afterwards)."""
    saved = planner_module.find_prefix_groups, planner_module.build_forest_plan
    planner_module.find_prefix_groups, planner_module.build_forest_plan = group_fn, plan_fn
    try:
        yield
    finally:
        planner_module.find_prefix_groups, planner_module.build_forest_plan = saved


def stages(step: Step, config: ForestConfig) -> dict[str, dict[str, Callable[[], object]]]:
    """Per stage, the ``before`` and ``after`` call on this step."""
    table, computed = step.table_cpu, step.computed
    grouping = find_prefix_groups(table, computed, BLOCK_SIZE, config)
    common = step.common

    def plan_kwargs() -> dict:
        return dict(
            query_start_loc_cpu=step.qsl,
            block_table_cpu=table,
            block_table=common.block_table_tensor,
            seq_lens=common.seq_lens,
            max_seq_len=common.max_seq_len,
            block_size=BLOCK_SIZE,
        )

    planner = planner_module.ForestPlanner(
        config,
        block_size=BLOCK_SIZE,
        dcp_world_size=1,
        full_cuda_graph=False,
        sliding_window=False,
        speculative=False,
    )

    def old_planner() -> object:
        with planner_with(oracle_find_prefix_groups, oracle_build_forest_plan):
            return planner.plan(common)

    out = {
        "group": {
            "before": lambda: oracle_find_prefix_groups(table, computed, BLOCK_SIZE, config),
            "after": lambda: find_prefix_groups(table, computed, BLOCK_SIZE, config),
        },
        "planner": {"before": old_planner, "after": lambda: planner.plan(common)},
    }
    if grouping is not None:
        out["plan"] = {
            "before": lambda: oracle_build_forest_plan(grouping, **plan_kwargs()),
            "after": lambda: build_forest_plan(grouping, **plan_kwargs()),
        }
        # The plan's numpy part alone (the first implementation had it inline).
        out["plan, host arrays"] = {"after": lambda: host_index(grouping, step.qsl, table)}
    return out


def same_result(a: object, b: object) -> bool:
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a) is type(b) and all(
            same_result(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_result, a, b))
    return type(a) is type(b) and a == b


def time_calls(fn: Callable[[], object], count: int) -> float:
    """Seconds per call over ``count`` calls."""
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) / count


def calls_for(fn: Callable[[], object], seconds: float) -> int:
    """Calls that take at least ``seconds`` (estimated from a short run)."""
    count = 1
    while True:
        took = time_calls(fn, count) * count
        if took >= 0.05:
            return max(1, int(count * seconds / took * 1.1) + 1)
        count *= 4


def measure(impls: dict[str, Callable[[], object]], reps: int, rep_s: float) -> dict[str, list]:
    counts = {name: calls_for(fn, rep_s) for name, fn in impls.items()}
    names = list(impls)
    per_call: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            per_call[name].append(time_calls(impls[name], counts[name]))
    return per_call


def _us(values: list[float]) -> str:
    v = [x * 1e6 for x in values]
    return f"{statistics.median(v):,.1f} [{min(v):,.1f}, {max(v):,.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rep-s", type=float, default=1.0)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--md", type=Path, help="write the table here as well")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = ForestConfig()
    rows = []
    for name in args.workloads.split(","):
        step = make_step(WORKLOADS[name](np.random.default_rng(0)))
        grouping = find_prefix_groups(step.table_cpu, step.computed, BLOCK_SIZE, config)
        shape = "x".join(map(str, step.table_cpu.shape))
        groups = "none" if grouping is None else f"{len(grouping.groups)} groups"
        host_reads = planner_module.STATS["host_table"]
        for stage, impls in stages(step, config).items():
            results = {k: fn() for k, fn in impls.items()}
            if "before" in impls and not same_result(results["before"], results["after"]):
                raise SystemExit(f"{name}/{stage}: before and after differ")
            per_call = measure(impls, args.reps, args.rep_s)
            before, ratio = "-", "-"
            if "before" in impls:
                ratios = [b / a for b, a in zip(per_call["before"], per_call["after"])]
                before = _us(per_call["before"])
                ratio = (
                    f"x{statistics.median(ratios):,.1f} [{min(ratios):,.1f}, {max(ratios):,.1f}]"
                )
            rows.append(
                f"| {name} ({shape}, {groups}) | {stage} | {before} "
                f"| {_us(per_call['after'])} | {ratio} |"
            )
            print(rows[-1], flush=True)
        if planner_module.STATS["host_table"] == host_reads:
            raise SystemExit(f"{name}: the planner did not find the host block table")
    header = [
        f"Host: {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, torch {torch.__version__}; "
        f"{args.reps} repetitions of >= {args.rep_s:g} s per implementation and stage.",
        "",
        "| workload (rows x columns read, result) | stage | before us/call median [min, max] "
        "| after us/call | before / after per rep |",
        "|---|---|---|---|---|",
    ]
    text = "\n".join(header + rows) + "\n"
    print(text)
    if args.md is not None:
        args.md.write_text(text)


if __name__ == "__main__":
    main()
