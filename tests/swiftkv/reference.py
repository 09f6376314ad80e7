"""An independent plain-PyTorch SwiftKV Llama forward (no vLLM code).

Reads the checkpoint's tensors by their Hugging Face names and computes, in
float32 or the given dtype, the logits of every position of one sequence:
bottom layers as in Llama; at ``num_key_value_layers`` the residual stream is
normalised by ``norm_swiftkv`` and each higher layer's K/V come from its
``k_proj_swiftkv``/``v_proj_swiftkv`` of that one state; its queries from
``q_proj_swiftkv``. Default (unscaled) RoPE only, which is what the test
checkpoints use.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch


class ReferenceSwiftKV:
    def __init__(self, ckpt: Path, dtype: torch.dtype = torch.float32, device: str = "cpu"):
        from safetensors.torch import load_file

        self.cfg = json.loads((Path(ckpt) / "config.json").read_text())
        self.w = {
            k: v.to(device=device, dtype=dtype)
            for f in sorted(Path(ckpt).glob("*.safetensors"))
            for k, v in load_file(str(f)).items()
        }
        c = self.cfg
        self.dtype, self.device = dtype, device
        self.layers = c["num_hidden_layers"]
        self.n_kv = c.get("num_key_value_layers") or self.layers
        self.heads, self.kv_heads = c["num_attention_heads"], c["num_key_value_heads"]
        self.head = c.get("head_dim") or c["hidden_size"] // self.heads
        self.eps = c["rms_norm_eps"]
        rope = c.get("rope_parameters") or {}
        self.theta = rope.get("rope_theta", c.get("rope_theta", 10000.0))

    def _norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf * self.w[name].float()).to(x.dtype)

    def _rope(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        # x: (T, H, D), neox style: rotate the two halves
        d = self.head
        inv = 1.0 / (self.theta ** (torch.arange(0, d, 2, device=x.device).float() / d))
        ang = pos.float()[:, None] * inv[None, :]
        cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
        x1, x2 = x[..., : d // 2].float(), x[..., d // 2 :].float()
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(x.dtype)

    def _attend(self, q, k, v) -> torch.Tensor:
        t = q.shape[0]
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = torch.einsum("qhd,khd->hqk", q.float(), k.float()) / self.head**0.5
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~mask, float("-inf")).softmax(-1)
        return torch.einsum("hqk,khd->qhd", s, v.float()).to(q.dtype).reshape(t, -1)

    def _lin(self, x, name):
        return x @ self.w[name].T

    def _mlp(self, x, i):
        p = f"model.layers.{i}.mlp."
        g = torch.nn.functional.silu(self._lin(x, p + "gate_proj.weight").float())
        return self._lin(
            (g * self._lin(x, p + "up_proj.weight").float()).to(x.dtype), p + "down_proj.weight"
        )

    @torch.no_grad()
    def logits(self, ids: list[int]) -> torch.Tensor:
        """Logits (T, vocab) in float32 for every position of ``ids``."""
        x = self.w["model.embed_tokens.weight"][torch.tensor(ids, device=self.device)]
        pos = torch.arange(len(ids), device=self.device)
        t = len(ids)
        kv_in = None
        for i in range(self.layers):
            p = f"model.layers.{i}."
            h = self._norm(x, p + "input_layernorm.weight")
            if i < self.n_kv:
                q = self._lin(h, p + "self_attn.q_proj.weight")
                k = self._lin(h, p + "self_attn.k_proj.weight")
                v = self._lin(h, p + "self_attn.v_proj.weight")
            else:
                if kv_in is None:
                    kv_in = self._norm(x, "model.norm_swiftkv.weight")
                q = self._lin(h, p + "self_attn.q_proj_swiftkv.weight")
                k = self._lin(kv_in, p + "self_attn.k_proj_swiftkv.weight")
                v = self._lin(kv_in, p + "self_attn.v_proj_swiftkv.weight")
            q = self._rope(q.view(t, self.heads, self.head), pos)
            k = self._rope(k.view(t, self.kv_heads, self.head), pos)
            v = v.view(t, self.kv_heads, self.head)
            x = x + self._lin(self._attend(q, k, v), p + "self_attn.o_proj.weight")
            x = x + self._mlp(self._norm(x, p + "post_attention_layernorm.weight"), i)
        x = self._norm(x, "model.norm.weight")
        return (x @ self.w["lm_head.weight"].T).float()

    def greedy(self, ids: list[int], new_tokens: int) -> list[int]:
        out: list[int] = []
        seq = list(ids)
        for _ in range(new_tokens):
            nxt = int(self.logits(seq)[-1].argmax())
            out.append(nxt)
            seq.append(nxt)
        return out
