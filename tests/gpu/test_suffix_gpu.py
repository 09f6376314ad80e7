"""Suffix decoding is lossless on GPU: same ids with and without speculation.

copy-llama in float32, prefix caching off, one fixed batch, greedy. Each
engine runs in a subprocess (clean GPU state). Where ids differ, the first
divergence must be a near-tie in the reference top-5 logprobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

MODEL = os.environ.get("ARCTIC_COPY_LLAMA", "/opt/models/copy-llama")
NEAR_TIE = 1e-3  # logprob gap (nats) that float32 reordering can flip

WORKER = r"""
import json, random, sys
from pathlib import Path
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
mode, model, out = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = json.loads((Path(model) / "config.json").read_text())
vocab = int(cfg.get("vocab_size", 348))
max_len = min(1024, int(cfg.get("max_position_embeddings", 1024)))
rng = random.Random(7)
prompts = []
for i in range(8):
    doc = [rng.randrange(4, vocab) for _ in range(96)]
    tail = doc[: 8 + 4 * i] if i % 2 == 0 else [rng.randrange(4, vocab) for _ in range(12)]
    prompts.append(doc + [rng.randrange(4, vocab) for _ in range(16)] + tail)
kw = dict(model=model, dtype="float32", enforce_eager=True, seed=0, gpu_memory_utilization=0.3,
          max_model_len=max_len, enable_prefix_caching=False, disable_log_stats=False)
if mode == "suffix":
    kw["speculative_config"] = {"method": "suffix", "num_speculative_tokens": 16}
llm = LLM(**kw)
sp = SamplingParams(temperature=0.0, max_tokens=96, ignore_eos=True, logprobs=5)
outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sp, use_tqdm=False)
accepted = 0.0
for m in llm.get_metrics():
    if m.name == "vllm:spec_decode_num_accepted_tokens":
        accepted += float(m.value)
res = {"accepted": accepted, "ids": [], "logprobs": []}
for o in outs:
    c = o.outputs[0]
    res["ids"].append(list(c.token_ids))
    res["logprobs"].append([{str(k): v.logprob for k, v in d.items()} for d in (c.logprobs or [])])
Path(out).write_text(json.dumps(res))
"""


def _run(mode: str, tmp: Path) -> dict:
    out = tmp / f"{mode}.json"
    env = dict(os.environ, VLLM_USE_V2_MODEL_RUNNER="0", VLLM_ENABLE_V1_MULTIPROCESSING="0")
    subprocess.run(
        [sys.executable, "-c", WORKER, mode, MODEL, str(out)], check=True, env=env, timeout=420
    )
    return json.loads(out.read_text())


@pytest.mark.skipif(not Path(MODEL).exists(), reason="copy-llama not present")
def test_suffix_speculation_is_lossless_fp32(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    ref = _run("none", tmp_path)
    spec = _run("suffix", tmp_path)
    print(f"\n[suffix lossless] accepted draft tokens: {spec['accepted']:.0f}")
    assert spec["accepted"] > 0, "suffix speculation never accepted a token: it did not run"
    identical, ties, bad = 0, [], []
    for i, (a, b) in enumerate(zip(ref["ids"], spec["ids"])):
        assert len(a) == len(b)
        if a == b:
            identical += 1
            continue
        d = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y)
        lps = ref["logprobs"][i][d]
        ref_lp, spec_lp = lps.get(str(a[d])), lps.get(str(b[d]))
        gap = None if spec_lp is None else ref_lp - spec_lp
        (ties if gap is not None and gap <= NEAR_TIE else bad).append((i, d, a[d], b[d], gap))
    print(
        f"[suffix lossless] identical {identical}/{len(ref['ids'])}; near-tie divergences: {ties}"
    )
    assert not bad, f"divergences that are not near-ties (req, pos, ref, spec, gap): {bad}"
