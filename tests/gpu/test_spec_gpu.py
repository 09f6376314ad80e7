"""The Arctic speculator on the GPU: fused kernels, lossless drafting, serving over HTTP.

Speculators come from ``ARCTIC_SPEC_DIR`` (made by ``bench/spec/train_speculator.py``
as ``<dir>/copy-mlp`` and ``<dir>/copy-lstm``); without them a random speculator is
written with ``make_checkpoint`` (acceptance is then low, losslessness still holds).
Engines run in subprocesses with the plugin on (``ARCTIC_INFERENCE_ENABLED=1``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

MODEL = os.environ.get("ARCTIC_COPY_LLAMA", "/opt/models/copy-llama")
SPEC_DIR = os.environ.get("ARCTIC_SPEC_DIR", "")
NEAR_TIE = 1e-3
ENV = dict(
    ARCTIC_INFERENCE_ENABLED="1",
    VLLM_USE_V2_MODEL_RUNNER="0",
    VLLM_ENABLE_V1_MULTIPROCESSING="0",
)


def _speculator(kind: str, tmp: Path) -> str:
    trained = Path(SPEC_DIR) / f"copy-{kind}"
    if SPEC_DIR and (trained / "config.json").exists():
        return str(trained)
    from arctic_inference.vllm.spec_dec import make_checkpoint as mc

    out = tmp / f"random-{kind}"
    assert mc.main([str(out), "--kind", kind, "--target", MODEL]) == 0
    return str(out)


def _spec_config(mode: str, tmp: Path) -> dict | None:
    if mode == "none":
        return None
    if mode == "suffix":
        return {"method": "suffix", "num_speculative_tokens": 16}
    kind = "lstm" if mode == "arctic-lstm" else "mlp"
    cfg = {"method": "arctic", "model": _speculator(kind, tmp)}
    if mode == "hybrid":
        cfg.update(enable_suffix_decoding=True, num_speculative_tokens=16)
    return cfg


@pytest.fixture
def cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    return torch


def test_fused_kernels_equal_the_fallback(cuda):
    torch = cuda
    from arctic_inference.vllm.spec_dec import ops

    if not ops.extension_loaded():
        pytest.skip("arctic_inference._spec_ops was not built (needs nvcc + --no-build-isolation)")
    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
        x = torch.randn(37, 4096, device="cuda", generator=g).to(dtype)
        w, b = (torch.randn(4096, device="cuda", generator=g).to(dtype) for _ in range(2))
        for args in ((x, w, b), (x, None, None)):
            got = ops.speculator_ln(*args, 1e-6)
            ref = ops.speculator_ln_reference(*args, 1e-6)
            torch.testing.assert_close(got.float(), ref.float(), atol=tol, rtol=tol)
        d = 1024
        states, z4 = (
            torch.randn(19, 4 * d, device="cuda", generator=g).to(dtype) for _ in range(2)
        )
        cell = torch.randn(19, d, device="cuda", generator=g).to(dtype)
        vecs = [torch.randn(d, device="cuda", generator=g).to(dtype) for _ in range(4)]
        for fast in (False, True):
            got = ops.sum_lstm(states, z4, cell, *vecs, 0.7, 1e-6, 1e-6, fast)
            ref = ops.sum_lstm_reference(states, z4, cell, *vecs, 0.7, 1e-6, 1e-6, fast)
            for a, r in zip(got, ref):
                torch.testing.assert_close(a.float(), r.float(), atol=tol * 4, rtol=tol * 4)


WORKER = r"""
import json, random, sys
from pathlib import Path
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
spec, model, out, eager = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1"
vocab = int(json.loads((Path(model) / "config.json").read_text())["vocab_size"])
rng = random.Random(7)
prompts = []
for i in range(8):
    doc = [rng.randrange(4, vocab) for _ in range(96)]
    tail = doc[: 8 + 4 * i] if i % 2 == 0 else [rng.randrange(4, vocab) for _ in range(12)]
    prompts.append(doc + [rng.randrange(4, vocab) for _ in range(16)] + tail)
kw = dict(model=model, dtype="float32", enforce_eager=eager, seed=0, gpu_memory_utilization=0.3,
          max_model_len=1024, enable_prefix_caching=False, disable_log_stats=False)
if spec:
    kw["speculative_config"] = spec
llm = LLM(**kw)
sp = SamplingParams(temperature=0.0, max_tokens=96, ignore_eos=True, logprobs=5)
outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sp, use_tqdm=False)
accepted = sum(float(m.value) for m in llm.get_metrics()
               if m.name == "vllm:spec_decode_num_accepted_tokens")
def graph_stats(worker):
    drafter = getattr(worker.model_runner, "drafter", None)
    graphs = getattr(drafter, "graphs", None)
    return dict(graphs.stats) if graphs is not None else {}
res = {"accepted": accepted, "ids": [], "logprobs": [], "graphs": llm.collective_rpc(graph_stats)[0]}
for o in outs:
    c = o.outputs[0]
    res["ids"].append(list(c.token_ids))
    res["logprobs"].append([{str(k): v.logprob for k, v in d.items()} for d in (c.logprobs or [])])
Path(out).write_text(json.dumps(res))
"""


def _generate(mode: str, tmp: Path) -> dict:
    """One engine's output on the fixed batch; ``*-graphed`` modes run with CUDA graphs."""
    out = tmp / f"{mode}.json"
    eager = "0" if mode.endswith("-graphed") else "1"
    spec = json.dumps(_spec_config(mode.removesuffix("-graphed"), tmp))
    subprocess.run(
        [sys.executable, "-c", WORKER, spec, MODEL, str(out), eager],
        check=True,
        env=dict(os.environ, **ENV),
        timeout=480,
    )
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """No-speculation output of the fixed batch, generated once for every mode."""
    return _generate("none", tmp_path_factory.mktemp("reference"))


@pytest.mark.skipif(not Path(MODEL).exists(), reason="copy-llama not present")
@pytest.mark.parametrize("mode", ["arctic", "arctic-lstm", "hybrid", "arctic-graphed"])
def test_arctic_speculation_is_lossless_fp32(cuda, tmp_path, mode, reference):
    ref = reference
    spec = _generate(mode, tmp_path)
    print(f"\n[{mode} lossless] accepted draft tokens: {spec['accepted']:.0f}")
    print(f"[{mode} lossless] proposal graphs: {spec['graphs']}")
    assert spec["accepted"] > 0, f"{mode}: no draft token was ever accepted; it did not run"
    if mode.endswith("-graphed"):
        assert spec["graphs"]["replays"] > 0 and spec["graphs"]["eager"] == 0
    else:
        assert spec["graphs"].get("replays", 0) == 0
    identical, ties, bad = 0, [], []
    for i, (a, b) in enumerate(zip(ref["ids"], spec["ids"])):
        assert len(a) == len(b)
        if a == b:
            identical += 1
            continue
        d = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y)
        lps = ref["logprobs"][i][d]
        gap = None if str(b[d]) not in lps else lps[str(a[d])] - lps[str(b[d])]
        (ties if gap is not None and gap <= NEAR_TIE else bad).append((i, d, a[d], b[d], gap))
    print(f"[{mode} lossless] identical {identical}/{len(ref['ids'])}; near ties: {ties}")
    assert not bad, f"divergences that are not near-ties (req, pos, ref, spec, gap): {bad}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not Path(MODEL).exists(), reason="copy-llama not present")
@pytest.mark.parametrize("mode", ["arctic", "suffix", "hybrid"])
def test_vllm_serve_over_http(cuda, tmp_path, mode):
    openai = pytest.importorskip("openai")
    port = _free_port()
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", MODEL,
        "--port", str(port), "--gpu-memory-utilization", "0.3", "--max-model-len", "1024",
        "--enforce-eager", "--speculative-config", json.dumps(_spec_config(mode, tmp_path)),
    ]  # fmt: skip
    log = (tmp_path / f"serve-{mode}.log").open("w")
    env = dict(
        os.environ, **{k: v for k, v in ENV.items() if k != "VLLM_ENABLE_V1_MULTIPROCESSING"}
    )
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none")
        deadline = time.time() + 300
        while True:
            try:
                model = client.models.list().data[0].id
                break
            except openai.APIConnectionError:
                assert server.poll() is None, f"vllm serve exited: see {log.name}"
                assert time.time() < deadline, "vllm serve did not come up in 300 s"
                time.sleep(2)
        prompt = "a b c d e f g a b c d e f g a b c"
        full = client.completions.create(model=model, prompt=prompt, max_tokens=32, temperature=0)
        assert full.usage.completion_tokens == 32 or full.choices[0].finish_reason == "stop"
        streamed = "".join(
            chunk.choices[0].text
            for chunk in client.completions.create(
                model=model, prompt=prompt, max_tokens=32, temperature=0, stream=True
            )
        )
        assert streamed == full.choices[0].text
        several = client.completions.create(
            model=model, prompt=prompt, max_tokens=16, temperature=0.8, n=3, seed=1
        )
        assert sorted(c.index for c in several.choices) == [0, 1, 2]
        assert all(c.text for c in several.choices)
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
