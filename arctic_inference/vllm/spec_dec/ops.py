"""The speculator's two fused ops, with the PyTorch definitions they must equal.

* ``speculator_ln``: the speculator's layer norm, ``x / rms(x) * weight + bias``
  (no mean subtraction; the affine part is optional).
* ``sum_lstm``: one gated step of the LSTM speculator, from the projected state
  and the (gate-repeated) token embedding to the new hidden and cell state.

Both compute in float32 whatever the input dtype and return the input dtype,
so the fallback and the CUDA kernels (``csrc/spec_ops``) agree to rounding.
The kernels are used when the optional extension was built and the tensors
are on a CUDA device; everywhere else (CI, CPU tests) the fallback runs.
"""

from __future__ import annotations

import functools
import importlib

import torch
import torch.nn.functional as F

# Built from csrc/spec_ops only where nvcc and torch were available (see CMakeLists.txt).
EXTENSION_MODULE = "arctic_inference._spec_ops"


@functools.cache
def extension_loaded() -> bool:
    """Whether the compiled ops are registered (imports the optional module once)."""
    if not torch.cuda.is_available():
        return False
    try:
        importlib.import_module(EXTENSION_MODULE)
    except ImportError:
        return False
    return hasattr(torch.ops.arctic_inference, "speculator_ln")


def _use_kernel(x: torch.Tensor) -> bool:
    return x.is_cuda and extension_loaded()


def _gelu(x: torch.Tensor, fast: bool) -> torch.Tensor:
    return F.gelu(x, approximate="tanh" if fast else "none")


def speculator_ln_reference(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """The fallback: RMS normalisation over the last axis, then the optional affine."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    if bias is not None:
        y = y + bias.float()
    return y.to(x.dtype)


def speculator_ln(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> torch.Tensor:
    if _use_kernel(x):
        return torch.ops.arctic_inference.speculator_ln(x.contiguous(), weight, bias, float(eps))
    return speculator_ln_reference(x, weight, bias, eps)


def sum_lstm_reference(
    states: torch.Tensor,
    z4: torch.Tensor,
    prev_cell: torch.Tensor,
    w_cell: torch.Tensor,
    b_cell: torch.Tensor,
    w_state: torch.Tensor,
    b_state: torch.Tensor,
    alpha: float,
    eps_cell: float,
    eps_state: float,
    use_fast_gelu: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fallback of one LSTM step.

    ``states`` and ``z4`` are ``[..., 4*D]`` laid out as forget, input, output
    and candidate blocks; ``prev_cell`` is ``[..., D]``. Returns the new hidden
    state and cell state, both ``[..., D]``.
    """
    d = prev_cell.shape[-1]
    if states.shape[-1] != 4 * d or z4.shape != states.shape:
        raise ValueError(
            f"sum_lstm: states {tuple(states.shape)} and z4 {tuple(z4.shape)} must both "
            f"be [..., 4*{d}] for a cell state of width {d}."
        )
    mixed = states.float() + z4.float() * alpha
    forget, inp, out = torch.sigmoid(mixed[..., : 3 * d]).split(d, dim=-1)
    candidate = _gelu(
        speculator_ln_reference(mixed[..., 3 * d :], w_cell, b_cell, eps_cell), use_fast_gelu
    )
    cell = prev_cell.float() * forget + candidate * inp
    hidden = _gelu(speculator_ln_reference(cell, w_state, b_state, eps_state), use_fast_gelu) * out
    return hidden.to(states.dtype), cell.to(prev_cell.dtype)


def sum_lstm(
    states: torch.Tensor,
    z4: torch.Tensor,
    prev_cell: torch.Tensor,
    w_cell: torch.Tensor,
    b_cell: torch.Tensor,
    w_state: torch.Tensor,
    b_state: torch.Tensor,
    alpha: float,
    eps_cell: float,
    eps_state: float,
    use_fast_gelu: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    if _use_kernel(states):
        shape = prev_cell.shape
        hidden, cell = torch.ops.arctic_inference.sum_lstm(
            states.reshape(-1, states.shape[-1]).contiguous(),
            z4.reshape(-1, z4.shape[-1]).contiguous(),
            prev_cell.reshape(-1, shape[-1]).contiguous(),
            w_cell,
            b_cell,
            w_state,
            b_state,
            float(alpha),
            float(eps_cell),
            float(eps_state),
            bool(use_fast_gelu),
        )
        return hidden.reshape(shape), cell.reshape(shape)
    return sum_lstm_reference(
        states,
        z4,
        prev_cell,
        w_cell,
        b_cell,
        w_state,
        b_state,
        alpha,
        eps_cell,
        eps_state,
        use_fast_gelu,
    )
