"""Seeded token workloads for the suffix-cache replay benchmark.

Each workload yields (prompt, response) pairs of token id lists.
- agentic: responses re-quote spans of their prompt and of earlier responses
  (tool outputs, file contents, plans repeated across turns).
- code: real Python source (the stdlib's .py files) cut into tokens with the
  stdlib ``tokenize`` module and numbered by first appearance.
- chat: Zipf-distributed tokens with little verbatim repetition.
- copy: the GPU benchmark's prompts (gpu_speed.py: a document, filler, then
  the document's opening re-quoted) answered by a copier that continues the
  quote but writes a random token with probability ``noise`` (5% matches the
  drafts/acceptance counts of the first H200 run of copy-llama).
"""

from __future__ import annotations

import io
import sys
import sysconfig
import tokenize
from pathlib import Path

import numpy as np

VOCAB = 32000


def agentic(n: int, seed: int = 0, prompt_len: int = 1024, resp_len: int = 256):
    rng = np.random.default_rng(seed)
    history: list[list[int]] = []
    system = rng.integers(0, VOCAB, 128).tolist()
    for _ in range(n):
        prompt = list(system)
        while len(prompt) < prompt_len:
            if history and rng.random() < 0.5:
                src = history[int(rng.integers(max(0, len(history) - 50), len(history)))]
                a = int(rng.integers(0, max(1, len(src) - 32)))
                prompt += src[a : a + int(rng.integers(16, 128))]
            else:
                prompt += rng.integers(0, VOCAB, int(rng.integers(8, 64))).tolist()
        prompt = prompt[:prompt_len]
        resp: list[int] = []
        while len(resp) < resp_len:
            r = rng.random()
            if r < 0.55:  # quote the prompt
                a = int(rng.integers(0, len(prompt) - 16))
                resp += prompt[a : a + int(rng.integers(8, 64))]
            elif r < 0.8 and history:  # repeat an earlier response
                src = history[int(rng.integers(0, len(history)))]
                a = int(rng.integers(0, max(1, len(src) - 16)))
                resp += src[a : a + int(rng.integers(8, 64))]
            else:
                resp += rng.integers(0, VOCAB, int(rng.integers(2, 12))).tolist()
        resp = resp[:resp_len]
        history.append(resp)
        yield prompt, resp


def _python_files(limit: int, seed: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.stat().st_size > 8000)
    rng = np.random.default_rng(seed)
    rng.shuffle(files)
    return files[:limit]


def code(n: int, seed: int = 0, prompt_len: int = 1024, resp_len: int = 256):
    vocab: dict[str, int] = {}
    produced = 0
    for path in _python_files(4 * n, seed):
        try:
            src = path.read_text(encoding="utf-8")
            toks = [t.string for t in tokenize.generate_tokens(io.StringIO(src).readline)]
        except (SyntaxError, UnicodeDecodeError, tokenize.TokenError):
            continue
        ids = [vocab.setdefault(s, len(vocab)) for s in toks]
        # Several (prompt, response) cuts per file: completing inside a file.
        for start in range(0, len(ids) - prompt_len - resp_len, prompt_len + resp_len):
            yield (
                ids[start : start + prompt_len],
                ids[start + prompt_len : start + prompt_len + resp_len],
            )
            produced += 1
            if produced >= n:
                return


def chat(n: int, seed: int = 0, prompt_len: int = 512, resp_len: int = 256):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        toks = (rng.zipf(1.3, prompt_len + resp_len) % VOCAB).tolist()
        yield toks[:prompt_len], toks[prompt_len:]


def copy_prompts(n: int, seed: int, doc_len: int = 192, vocab: int = 348) -> list[list[int]]:
    """Prompts that re-quote an earlier span (same construction as gpu_speed.py)."""
    import random

    rng = random.Random(seed)
    prompts = []
    for _ in range(n):
        doc = [rng.randrange(4, vocab) for _ in range(doc_len)]
        filler = [rng.randrange(4, vocab) for _ in range(doc_len // 4)]
        prompts.append(doc + filler + doc[: doc_len // 6])
    return prompts


def context_copy_prompts(n: int, seed: int, length: int = 128, vocab: int = 348) -> list[list[int]]:
    """Prompts in copy-llama's training format: random ids where later spans re-quote earlier ones.

    copy-llama was trained on 384-token sequences of random ids (3..vocab-1) that, after a
    random lead of 32-96 tokens, alternate re-quotes of an earlier span (8-64 tokens) with
    0-12 fresh tokens. Prompts of ``length`` tokens built the same way keep prompt plus
    output inside the context the model learned to copy in.
    """
    import random

    rng = random.Random(seed)
    prompts = []
    for _ in range(n):
        toks = [rng.randrange(3, vocab) for _ in range(length)]
        pos = rng.randrange(32, 96) if length > 96 else length // 3
        while pos < length - 8:
            src = rng.randrange(0, pos - 4)
            span = min(rng.randrange(8, 64), length - pos, pos - src)
            toks[pos : pos + span] = toks[src : src + span]
            pos += span + rng.randrange(0, 12)
        prompts.append(toks)
    return prompts


COPY_PERIOD = 192 + 192 // 4  # document + filler of copy_prompts' default doc_len


def noisy_copy(
    prompt: list[int], n: int, noise: float, rng, vocab: int = 348, period: int = COPY_PERIOD
) -> list[int]:
    """Continue the quote (it repeats with period document + filler) with random slips."""
    ctx = list(prompt)
    for _ in range(n):
        ctx.append(ctx[-period] if rng.random() >= noise else int(rng.integers(4, vocab)))
    return ctx[len(prompt) :]


def copy(n: int, seed: int = 0, resp_len: int = 256, noise: float = 0.05):
    rng = np.random.default_rng(seed)
    for p in copy_prompts(n, seed + 1):
        yield p, noisy_copy(p, resp_len, noise, rng)


def copy_record(
    single: int = 8, batch: int = 32, resp_len: int = 256, noise: float = 0.05, seed: int = 0
):
    """A gpu_speed.py --record layout filled by the noisy copier (for offline checks)."""
    rng = np.random.default_rng(seed)
    a = copy_prompts(single, 1)
    b = copy_prompts(batch, 2)
    outs_b = [noisy_copy(p, resp_len, noise, rng) for p in b]
    return {
        "phases": {
            "a_single": {
                "prompts": a,
                "outputs": {"none": [noisy_copy(p, resp_len, noise, rng) for p in a]},
            },
            "b_batch_first": {"prompts": b, "outputs": {"none": outs_b}},
            "c_batch_again": {"prompts": b, "outputs": {"none": outs_b}},
        }
    }


WORKLOADS = {"agentic": agentic, "code": code, "chat": chat, "copy": copy}

if __name__ == "__main__":  # quick look at sizes
    for name, fn in WORKLOADS.items():
        pairs = list(fn(20))
        print(name, len(pairs), sum(len(p) + len(r) for p, r in pairs), file=sys.stderr)
