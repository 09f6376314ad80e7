"""SwiftKV on the GPU: bulk-write kernel, exactness against the reference, bf16 logits.

Checkpoints are made from the staged small-llama / tiny-llama by
``arctic_inference.vllm.swiftkv.make_checkpoint``. Every engine runs in its
own subprocess (``swiftkv_engine_run.py``). float32, greedy, one batch per
round; where ids differ, the first divergence must be a near-tie of the
reference logits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
SMALL = Path(os.environ.get("ARCTIC_SMALL_LLAMA", "/opt/models/small-llama"))
TINY = Path(os.environ.get("ARCTIC_TINY_LLAMA", "/opt/models/tiny-llama"))
WORK = Path(os.environ.get("ARCTIC_SWIFTKV_MODELS", "/opt/models"))
NEAR_TIE = 1e-3
LENGTHS = [1, 7, 33, 130, 300, 517, 64, 1000]
NEW = 16

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    return torch


def _ckpt(name: str, base: Path, kv_layers: int) -> Path:
    from arctic_inference.vllm.swiftkv.make_checkpoint import build

    out = WORK / name
    if not (out / "config.json").exists():
        build(out, kv_layers, base=base)
    return out


@pytest.fixture(scope="module")
def small_swiftkv() -> Path:
    if not SMALL.exists():
        pytest.skip("small-llama not present")
    return _ckpt("small-swiftkv", SMALL, 8)


def _engine(tmp: Path, tag: str, **spec) -> dict:
    spec.setdefault("dtype", "float32")
    spec.setdefault("eager", True)
    spec.setdefault("prefix_caching", False)
    spec.setdefault("max_batched", 256)
    spec.setdefault("backend", "FLASH_ATTN")
    spec.setdefault("lengths", LENGTHS)
    spec.setdefault("new_tokens", NEW)
    out = tmp / f"{tag}.json"
    env = dict(
        os.environ,
        VLLM_USE_V2_MODEL_RUNNER="0",
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        ARCTIC_INFERENCE_ENABLED="1",
    )
    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("swiftkv_engine_run.py")),
            json.dumps(spec),
            str(out),
        ],
        check=True,
        env=env,
        timeout=400,
    )
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def reference_ids(small_swiftkv):
    """Greedy ids of the plain-PyTorch reference (float32, on the GPU) per prompt."""
    _cuda()
    from tests.gpu.swiftkv_engine_run import prompts_for
    from tests.swiftkv.reference import ReferenceSwiftKV

    ref = ReferenceSwiftKV(small_swiftkv, device="cuda")
    prompts = prompts_for(str(small_swiftkv), LENGTHS)
    ids, top2 = [], []
    for p in prompts:
        seq, gen, gaps = list(p), [], []
        for _ in range(NEW):
            logits = ref.logits(seq)[-1]
            lp = logits.log_softmax(-1)
            best = lp.topk(2)
            gen.append(int(best.indices[0]))
            gaps.append(float(best.values[0] - best.values[1]))
            seq.append(gen[-1])
        ids.append(gen)
        top2.append(gaps)
    del ref
    import torch

    torch.cuda.empty_cache()
    return prompts, ids, top2


def _compare(name: str, got: list[list[int]], ref_ids, ref_gaps) -> None:
    identical, ties, bad = 0, [], []
    for i, (a, b) in enumerate(zip(ref_ids, got)):
        assert len(b) == len(a)
        if a == b:
            identical += 1
            continue
        d = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y)
        (ties if ref_gaps[i][d] <= NEAR_TIE else bad).append((i, d, a[d], b[d], ref_gaps[i][d]))
    print(f"[swiftkv {name}] identical {identical}/{len(ref_ids)}; near ties {ties}")
    assert not bad, f"{name}: divergences from the reference that are not near-ties: {bad}"


def test_triton_write_equals_fallback_and_vllm_cache_op():
    torch = _cuda()
    from vllm import _custom_ops as ops
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.attention.backends.utils import set_kv_cache_layout

    from arctic_inference.vllm.swiftkv.kv_layout import resolve_layout
    from arctic_inference.vllm.swiftkv.kv_write import write_kv_fallback, write_kv_triton

    blocks, bs, heads, head, layers, tokens = 64, 16, 8, 64, 3, 700
    layout = resolve_layout(FlashAttentionBackend, head)
    shape = FlashAttentionBackend.get_kv_cache_shape(blocks, bs, heads, head)
    set_kv_cache_layout("NHD")  # what FLASH_ATTN uses on Hopper
    try:
        order = FlashAttentionBackend.get_kv_cache_stride_order()
    finally:
        set_kv_cache_layout(None)
    inv = [order.index(i) for i in range(4)]

    def caches():
        return [
            torch.zeros([shape[i] for i in order], dtype=torch.bfloat16, device="cuda").permute(
                *inv
            )
            for _ in range(layers)
        ]

    g = torch.Generator(device="cuda").manual_seed(0)
    kv = torch.randn(tokens, 2, layers, heads, head, device="cuda", generator=g).bfloat16()
    k, v = kv[:, 0], kv[:, 1]  # strided views, like the model's split projection
    slots = torch.randperm(blocks * bs, device="cuda", generator=g)[: tokens - 20]
    slots[::7] = -1
    a, b, c = caches(), caches(), caches()

    def views(cs):
        return [layout.split(x)[0] for x in cs], [layout.split(x)[1] for x in cs]

    assert write_kv_triton(k, v, *views(a), slots)
    write_kv_fallback(k, v, *views(b), slots)
    for layer, cache in enumerate(c):
        kc, vc = cache.transpose(1, 2).split(head, dim=-1)  # FLASH_ATTN's own split
        one = torch.tensor(1.0, device="cuda")
        ops.reshape_and_cache_flash(
            k[:, layer].contiguous(), v[:, layer].contiguous(), kc, vc, slots, "auto", one, one
        )
    torch.cuda.synchronize()
    for x, y, z in zip(a, b, c):
        assert torch.equal(x, y) and torch.equal(x, z)
    assert int((a[0] != 0).sum()) > 0


# float32 needs TRITON_ATTN (FLASH_ATTN has no fp32 kernels); FLASH_ATTN is covered in bf16.
@pytest.mark.parametrize(
    "backend,eager,prefix",
    [
        ("TRITON_ATTN", True, False),
        ("TRITON_ATTN", False, True),
    ],
)
def test_swiftkv_greedy_ids_equal_reference_fp32(
    small_swiftkv, reference_ids, tmp_path, backend, eager, prefix
):
    prompts, ref_ids, ref_gaps = reference_ids
    res = _engine(
        tmp_path,
        "swiftkv",
        model=str(small_swiftkv),
        backend=backend,
        eager=eager,
        prefix_caching=prefix,
        rounds=2 if prefix else 1,
        singles=[5, 7],
    )
    assert res["prompts"] == prompts
    counts = res["counts"]
    print(f"[swiftkv {backend} eager={eager} prefix={prefix}] paths {counts}")
    assert counts["prefill"] > 0 and counts["write_triton"] > 0 and counts["write_torch"] == 0
    # Compiled runs: the top stack of prefill batches replays its piecewise CUDA graphs.
    assert (counts["top_graph"] > 0) == (not eager)
    for r, batch in enumerate(res["rounds"]):
        _compare(
            f"{backend} eager={eager} prefix={prefix} round {r}",
            [o["ids"] for o in batch],
            ref_ids,
            ref_gaps,
        )
    singles = res["singles"]
    _compare(
        f"{backend} single requests",
        [singles[k]["ids"] for k in sorted(singles)],
        [ref_ids[int(k)] for k in sorted(singles)],
        [ref_gaps[int(k)] for k in sorted(singles)],
    )


def test_switched_off_swiftkv_is_vllm_llama_exactly(tmp_path):
    if not TINY.exists():
        pytest.skip("tiny-llama not present")
    _cuda()
    off = _ckpt("tiny-swiftkv-off", TINY, 2)
    a = _engine(tmp_path, "off", model=str(off), backend="TRITON_ATTN")
    b = _engine(tmp_path, "llama", model=str(TINY), backend="TRITON_ATTN")
    worst = 0.0
    for x, y in zip(a["rounds"][0], b["rounds"][0]):
        assert x["ids"] == y["ids"]
        for dx, dy in zip(x["logprobs"], y["logprobs"]):
            assert dx.keys() == dy.keys()
            worst = max(worst, max(abs(dx[t] - dy[t]) for t in dx))
    print(f"[swiftkv off vs LlamaForCausalLM] ids identical, max logprob diff {worst:.3g}")
    assert worst == 0.0


def _bf16_error(res: dict, ckpt: Path) -> tuple[float, int]:
    """Max |logprob| error of an engine's top-5 entries against the fp32 reference."""
    import torch

    from tests.swiftkv.reference import ReferenceSwiftKV

    ref = ReferenceSwiftKV(ckpt, device="cuda")
    worst, n, cache = 0.0, 0, {}
    for batch in res["rounds"]:
        for prompt, out in zip(res["prompts"], batch):
            seq = list(prompt)
            for tok, top in zip(out["ids"], out["logprobs"]):
                key = tuple(seq)
                if key not in cache:
                    cache[key] = ref.logits(seq)[-1].log_softmax(-1)
                lp = cache[key]
                for t, value in top.items():
                    if lp[int(t)] > -5:  # the entries that matter for sampling
                        worst = max(worst, abs(value - float(lp[int(t)])))
                        n += 1
                seq.append(tok)
    del ref, cache
    torch.cuda.empty_cache()
    return worst, n


def test_bf16_flash_attn_graphs_prefix_cache_as_close_as_llama(small_swiftkv, tmp_path):
    """bf16 error of SwiftKV against its fp32 reference, measured against the same
    error of vLLM's plain Llama (same base weights) on the same prompts."""
    _cuda()
    spec = dict(
        dtype="bfloat16",
        eager=False,
        backend="FLASH_ATTN",
        prefix_caching=True,
        rounds=2,
        new_tokens=4,
    )
    sw = _engine(tmp_path, "sw_bf16", model=str(small_swiftkv), **spec)
    ll = _engine(tmp_path, "llama_bf16", model=str(SMALL), **spec)
    print(f"[swiftkv bf16 FLASH_ATTN graphs prefix] paths {sw['counts']}")
    assert sw["counts"]["prefill"] > 0 and sw["counts"]["write_triton"] > 0
    assert sw["counts"]["top_graph"] > 0
    sw_err, n_sw = _bf16_error(sw, small_swiftkv)
    ll_err, n_ll = _bf16_error(ll, SMALL)
    print(
        f"[swiftkv bf16] max |logprob - fp32 reference|: swiftkv {sw_err:.3f} over {n_sw}, "
        f"llama {ll_err:.3f} over {n_ll}"
    )
    assert n_sw > 0 and n_ll > 0
    assert sw_err <= 1.5 * ll_err + 0.1
