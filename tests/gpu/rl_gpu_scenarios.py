"""One vLLM engine per process for the RL / memory GPU checks.

Usage (the Arctic knobs come from the environment, as a worker would inherit
them; test_rl_gpu.py sets them per run):

    python tests/gpu/rl_gpu_scenarios.py fp32  MODEL_DIR [--replay]
    python tests/gpu/rl_gpu_scenarios.py sleep TARGET_DIR DRAFT_DIR

The engine runs in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0), eager,
with a small max_model_len. The last stdout line is ``RESULT <json>``.

fp32: greedy generation with logprobs; a forward hook on the model's
LogitsProcessor records, for every step, the hidden states fed to the LM head
and the logits vLLM produced. The reference is an fp64 projection of those
very hidden states with the LM-head weight read from the checkpoint's
safetensors (as the model holds it: rounded to the run dtype). It measures
exactly what the flag changes — the LM-head projection and the logprobs
derived from it — with everything upstream of the head identical.

sleep: speculative decoding with a draft model; the same greedy batch before
sleep, after sleep(1)/wake_up(), and after sleep(2)/wake_up()/reload_weights;
token ids, the drafter's proposed tokens, its parameter checksums and the
engine's spec-decode counters per phase, plus device memory in use
(torch.cuda.mem_get_info) at each point.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
os.environ.setdefault("ARCTIC_INFERENCE_ENABLED", "1")

import torch  # noqa: E402

KEY = "arctic_max_tokens_per_seq"
GiB = 1024**3
MiB = 1024**2


def _load_plugin() -> None:
    # The entry point loads it too when the project is installed; calling it
    # here also covers a PYTHONPATH-only checkout. Idempotent.
    from arctic_inference.vllm.plugin import load_plugin

    assert load_plugin(), "Arctic Inference did not load (ARCTIC_INFERENCE_ENABLED?)"


def _patch_names() -> list[str]:
    from arctic_inference.patching import applied_patches

    return [r.patch for r in applied_patches()]


def _prompts(n: int, length: int, vocab: int, seed: int) -> list[dict[str, list[int]]]:
    gen = torch.Generator().manual_seed(seed)
    return [
        {"prompt_token_ids": torch.randint(3, vocab - 1, (length,), generator=gen).tolist()}
        for _ in range(n)
    ]


def _checkpoint_lm_head(model_dir: str) -> torch.Tensor:
    """The LM-head weight from the safetensors (the tied embedding if no head)."""
    from safetensors import safe_open

    tensors: dict[str, torch.Tensor] = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        with safe_open(path, framework="pt") as f:
            for key in ("lm_head.weight", "model.embed_tokens.weight"):
                if key in f.keys():
                    tensors[key] = f.get_tensor(key)
    if "lm_head.weight" in tensors:
        return tensors["lm_head.weight"]
    if "model.embed_tokens.weight" in tensors:
        return tensors["model.embed_tokens.weight"]
    raise RuntimeError(f"no lm_head/embed_tokens weight in {model_dir}/*.safetensors")


def _max_model_len(*model_dirs: str, cap: int = 512) -> int:
    """A small context that every model (target and drafter) supports."""
    limits = [cap]
    for d in model_dirs:
        with open(os.path.join(d, "config.json")) as f:
            limit = json.load(f).get("max_position_embeddings")
        if limit:
            limits.append(int(limit))
    return min(limits)


# --- fp32 -------------------------------------------------------------------


def _install_capture(model: torch.nn.Module) -> int:
    records: list[tuple[torch.Tensor, torch.Tensor]] = []

    def hook(module, args, output):
        records.append((args[1].detach().cpu(), output.detach().cpu()))

    model._arctic_capture = records
    model.logits_processor.register_forward_hook(hook)
    return len(records)


def _take_capture(model: torch.nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = list(model._arctic_capture)
    model._arctic_capture.clear()
    return out


def _lm_head_info(model: torch.nn.Module) -> dict[str, Any]:
    w = model.lm_head.weight
    return {
        "weight": w.detach().cpu(),
        "lm_head_dtype": str(w.dtype),
        "param_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
        "param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
    }


def _align(cap: list, tokens: list[int]) -> list:
    """The run of captured LM-head calls whose greedy argmax is ``tokens``.

    One request at a time and no async scheduling make this the first
    ``len(tokens)`` calls; the search only guards against a stray extra call.
    """
    argmax = [int(logits[0].argmax()) for _, logits in cap]
    for start in range(0, len(cap) - len(tokens) + 1):
        if argmax[start : start + len(tokens)] == tokens:
            return cap[start : start + len(tokens)]
    return cap[: len(tokens)]


def run_fp32(model_dir: str, replay: bool) -> dict[str, Any]:
    from vllm import LLM, SamplingParams

    _load_plugin()
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    llm = LLM(
        model=model_dir,
        dtype="bfloat16",
        enforce_eager=True,
        max_model_len=_max_model_len(model_dir),
        enable_prefix_caching=False,
        kv_cache_memory_bytes=GiB,
        gpu_memory_utilization=0.2,
        max_num_seqs=16,
        max_num_batched_tokens=1024,
        async_scheduling=False,  # one LM-head call per generated token, in order
        seed=0,
    )
    startup_s = time.time() - t0
    vocab = llm.llm_engine.model_config.get_vocab_size()
    (info,) = llm.apply_model(_lm_head_info)
    llm.apply_model(_install_capture)

    steps = 32
    params = SamplingParams(temperature=0.0, max_tokens=steps, logprobs=20, ignore_eos=True)
    prompts = _prompts(6, 24, vocab, seed=7)
    outputs, captures = [], []
    for prompt in prompts:  # one request at a time: one LM-head row per step
        (out,) = llm.generate([prompt], params, use_tqdm=False)
        outputs.append(out.outputs[0])
        (cap,) = llm.apply_model(_take_capture)
        captures.append(cap)

    w_ckpt = _checkpoint_lm_head(model_dir)
    w_run = info["weight"][:vocab]
    w_ref = w_ckpt[:vocab].to(w_run.dtype).double()  # as the model holds it
    same_weights = bool(torch.equal(w_ref, w_run.double()))

    lp_err, logit_err, aligned, compared = 0.0, 0.0, True, 0
    lp_err_sum = 0.0
    logits_dtype = None
    for completion, cap in zip(outputs, captures):
        cap = _align(cap, list(completion.token_ids))
        aligned &= len(cap) == len(completion.token_ids)
        for (hidden, logits), tok, lps in zip(cap, completion.token_ids, completion.logprobs):
            logits_dtype = str(logits.dtype)
            ref_logits = hidden.double() @ w_ref.T
            ref_lp = torch.log_softmax(ref_logits, dim=-1)[0]
            got = logits[0, :vocab].double()
            aligned &= int(got.argmax()) == tok  # greedy: the sampled token
            logit_err = max(logit_err, float((got - ref_logits[0]).abs().max()))
            for token_id, lp in lps.items():
                err = abs(lp.logprob - float(ref_lp[token_id]))
                lp_err = max(lp_err, err)
                lp_err_sum += err
                compared += 1

    result: dict[str, Any] = {
        "model": os.path.basename(model_dir.rstrip("/")),
        "fp32_flag": os.environ.get("ARCTIC_FP32_LM_HEAD", "0"),
        "fp32_patch_applied": "FP32LMHeadPatch" in _patch_names(),
        "checkpoint_dtype": str(w_ckpt.dtype),
        "reference_weight_equals_vllm_weight": same_weights,
        "lm_head_dtype": info["lm_head_dtype"],
        "param_dtypes": info["param_dtypes"],
        "param_bytes": info["param_bytes"],
        "logits_dtype": logits_dtype,
        "steps_aligned": aligned,
        "logprobs_compared": compared,
        "max_abs_logprob_err": lp_err,
        "mean_abs_logprob_err": lp_err_sum / max(compared, 1),
        "max_abs_logit_err": logit_err,
        "peak_allocated_mib": torch.cuda.max_memory_allocated() / MiB,
        "allocated_mib": torch.cuda.memory_allocated() / MiB,
        "startup_s": round(startup_s, 1),
    }
    if replay:
        result["replay"] = run_replay(llm, vocab)
    return result


def run_replay(llm: Any, vocab: int) -> dict[str, Any]:
    from vllm import SamplingParams

    prompt = _prompts(1, 16, vocab, seed=3)
    report: dict[str, Any] = {
        "knob": os.environ.get("ARCTIC_PER_SEQ_MAX_TOKENS", "0"),
    }
    for label, lengths, seed in (
        ("seeded", [5, 11, 17, 29], 1234),
        ("unseeded", [7, 3, 12, 3], None),
    ):
        params = SamplingParams(
            n=4,
            temperature=1.0,
            seed=seed,
            max_tokens=16,
            ignore_eos=True,
            extra_args={KEY: lengths},
        )
        (out,) = llm.generate(prompt, params, use_tqdm=False)
        ordered = sorted(out.outputs, key=lambda c: c.index)
        report[label] = {
            "asked": lengths,
            "got": [len(c.token_ids) for c in ordered],
            "finish": [c.finish_reason for c in ordered],
        }
    try:
        SamplingParams(n=4, extra_args={KEY: [3, 4, 5]})
        report["bad_list_error"] = None
    except ValueError as exc:
        report["bad_list_error"] = str(exc)
    return report


# --- sleep ------------------------------------------------------------------


def _install_draft_recorder(worker: Any) -> bool:
    drafter = worker.model_runner.drafter
    if getattr(drafter, "_arctic_drafts", None) is None:
        drafter._arctic_drafts = []
        orig = drafter.propose

        def propose(*args, **kwargs):
            out = orig(*args, **kwargs)
            ids = out[0] if isinstance(out, tuple) else out
            drafter._arctic_drafts.append(ids.tolist() if hasattr(ids, "tolist") else ids)
            return out

        drafter.propose = propose
    return True


def _take_drafts(worker: Any) -> list:
    rec = worker.model_runner.drafter._arctic_drafts
    out = list(rec)
    rec.clear()
    return out


def _drafter_checksums(worker: Any) -> list[list]:
    drafter = worker.get_draft_model()
    out = []
    for name, t in list(drafter.named_parameters()) + list(drafter.named_buffers()):
        t64 = t.detach().double()
        out.append([name, repr(float(t64.sum())), repr(float(t64.abs().sum()))])
    return out


def _spec_counters(llm: Any) -> dict[str, float]:
    wanted = {
        "vllm:spec_decode_num_drafts": "drafts",
        "vllm:spec_decode_num_draft_tokens": "draft_tokens",
        "vllm:spec_decode_num_accepted_tokens": "accepted",
    }
    totals = dict.fromkeys(wanted.values(), 0.0)
    for metric in llm.get_metrics():
        name = metric.name.removesuffix("_total")
        if name in wanted and hasattr(metric, "value"):
            totals[wanted[name]] += metric.value
    return totals


def _used_gib() -> float:
    free, total = torch.cuda.mem_get_info()
    return (total - free) / GiB


def run_sleep(target_dir: str, draft_dir: str) -> dict[str, Any]:
    from vllm import LLM, SamplingParams

    _load_plugin()
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the context exists before the baseline
    memory = {"baseline_context": _used_gib()}
    llm = LLM(
        model=target_dir,
        speculative_config={
            "method": "draft_model",
            "model": draft_dir,
            "num_speculative_tokens": 3,
        },
        enable_sleep_mode=True,
        enforce_eager=True,
        enable_prefix_caching=False,
        max_model_len=_max_model_len(target_dir, draft_dir),
        kv_cache_memory_bytes=2 * GiB,
        gpu_memory_utilization=0.3,
        max_num_seqs=16,
        max_num_batched_tokens=1024,
        dtype="bfloat16",
        disable_log_stats=False,
        seed=0,
    )
    memory["loaded"] = _used_gib()
    vocab = llm.llm_engine.model_config.get_vocab_size()
    llm.collective_rpc(_install_draft_recorder)
    prompts = _prompts(8, 20, vocab, seed=11)
    params = SamplingParams(temperature=0.0, max_tokens=48, ignore_eos=True)

    def phase() -> dict[str, Any]:
        before = _spec_counters(llm)
        outs = llm.generate(prompts, params, use_tqdm=False)
        after = _spec_counters(llm)
        counts = {k: after[k] - before[k] for k in after}
        counts["acceptance_rate"] = counts["accepted"] / max(counts["draft_tokens"], 1)
        (drafts,) = llm.collective_rpc(_take_drafts)
        (checksums,) = llm.collective_rpc(_drafter_checksums)
        return {
            "ids": [list(o.outputs[0].token_ids) for o in outs],
            "spec": counts,
            "drafts": drafts,
            "drafter_checksums": checksums,
        }

    phases = {"before": phase()}

    llm.sleep(level=1)
    memory["after_sleep1"] = _used_gib()
    llm.wake_up()
    memory["after_wake1"] = _used_gib()
    phases["after_level1"] = phase()

    llm.sleep(level=2)
    memory["after_sleep2"] = _used_gib()
    llm.wake_up()
    llm.collective_rpc("reload_weights")  # vLLM reloads the target only
    memory["after_wake2_reload"] = _used_gib()
    phases["after_level2"] = phase()

    return {
        "keep_drafter_flag": os.environ.get("ARCTIC_SLEEP_KEEP_DRAFTER", "0"),
        "keep_drafter_patch_applied": "WorkerSleepKeepDrafterPatch" in _patch_names(),
        "memory_used_gib": memory,
        "phases": phases,
    }


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "fp32":
        result = run_fp32(sys.argv[2], replay="--replay" in sys.argv[3:])
    elif kind == "sleep":
        result = run_sleep(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown scenario {kind!r}; use fp32 or sleep")
    sys.stdout.flush()
    print("RESULT " + json.dumps(result), flush=True)
    # Skip interpreter teardown of the in-process engine (can hang on exit).
    os._exit(0)
