"""A float64 speculator read straight from the checkpoint tensors (no vLLM, no fused ops).

Written from the step definitions, independently of the served model: the MLP
step ``gelu(ln(proj(h) + emb(t) * c))`` and the LSTM step with forget, input,
output and candidate blocks, ``c = sqrt((1 - w^2) * D / 2) / w`` with
``w = 0.5 ** (0.5 / n_predict)``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

EPS = 1e-6


def gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def rms_ln(x, w=None, b=None):
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)
    return y if w is None else y * w + b


class ReferenceSpeculator:
    def __init__(self, ckpt: Path):
        from safetensors.torch import load_file

        self.cfg = json.loads((ckpt / "config.json").read_text())
        self.t = {k: v.double() for k, v in load_file(str(ckpt / "model.safetensors")).items()}
        self.lstm = self.cfg.get("method") == "sum_lstm"
        self.tied = self.cfg["tie_weights"]
        width = int(str(self.cfg.get("inner_dim") or self.cfg["emb_dim"]))
        w = 0.5 ** (0.5 / self.cfg["n_predict"])
        self.c = math.sqrt((1 - w * w) * width / 2) / w

    def _k(self, i: int) -> int:
        return 0 if self.tied else i

    def _p(self, i: int) -> int:
        return min(i, 1) if self.tied else i

    def step_logits(self, ids: torch.Tensor, hidden: torch.Tensor, tokens: torch.Tensor):
        """Logits of every step, feeding step i the token ``tokens[:, i-1]`` (teacher forcing)."""
        t = self.t
        h = hidden.double()
        if self.cfg["scale_input"]:
            h = rms_ln(h) / math.sqrt(2)
        tok = ids
        cell = None
        out = []
        for i in range(tokens.shape[1]):
            if self.lstm:
                d = t["cell_ln.0.weight"].shape[0]
                proj = torch.cat(
                    [
                        t[f"{g}_proj.{self._p(i)}.weight"]
                        for g in ("forget", "input", "output", "cell")
                    ]
                )
                a = h @ proj.T + t["forget_emb.0.weight"][tok].repeat(1, 4) * self.c
                f, g_in, o = (torch.sigmoid(a[:, j * d : (j + 1) * d]) for j in range(3))
                cand = gelu(rms_ln(a[:, 3 * d :], t["cell_ln.0.weight"], t["cell_ln.0.bias"]))
                cell = (torch.zeros_like(cand) if cell is None else cell) * f + cand * g_in
                h = gelu(rms_ln(cell, t["state_ln.0.weight"], t["state_ln.0.bias"])) * o
            else:
                k = self._k(i)
                a = h @ t[f"proj.{self._p(i)}.weight"].T + t[f"emb.{k}.weight"][tok] * self.c
                h = gelu(rms_ln(a, t[f"ln.{k}.weight"], t[f"ln.{k}.bias"]))
            out.append(h @ t[f"head.{self._k(i)}.weight"].T)
            tok = tokens[:, i]
        return torch.stack(out, dim=1)
