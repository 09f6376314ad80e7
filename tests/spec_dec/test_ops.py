"""The fused ops' PyTorch definitions against a float64 reference written from the maths."""

from __future__ import annotations

import math

import pytest
import torch

from arctic_inference.vllm.spec_dec import ops


def _ln64(x, w, b, eps):
    x = x.double()
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    if w is not None:
        y = y * w.double() + b.double()
    return y


def _gelu64(x, fast):
    if fast:
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


TOL = {torch.float32: 2e-5, torch.bfloat16: 3e-2, torch.float16: 4e-3}


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("affine", [True, False])
def test_speculator_ln_matches_float64(dtype, affine):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(5, 3, 96, generator=g) * 3 + 0.5).to(dtype)
    w = (1 + torch.randn(96, generator=g)).to(dtype) if affine else None
    b = torch.randn(96, generator=g).to(dtype) if affine else None
    got = ops.speculator_ln(x, w, b, 1e-6)
    assert got.dtype == dtype and got.shape == x.shape
    torch.testing.assert_close(got.double(), _ln64(x, w, b, 1e-6), atol=TOL[dtype], rtol=TOL[dtype])


def test_speculator_ln_does_not_subtract_the_mean():
    x = torch.full((1, 8), 3.0)
    assert torch.allclose(ops.speculator_ln(x, None, None, 0.0), torch.ones(1, 8))


def _sum_lstm64(states, z4, cell, wc, bc, ws, bs, alpha, eps_c, eps_s, fast):
    d = cell.shape[-1]
    a = states.double() + alpha * z4.double()
    f = torch.sigmoid(a[..., :d])
    i = torch.sigmoid(a[..., d : 2 * d])
    o = torch.sigmoid(a[..., 2 * d : 3 * d])
    cand = _gelu64(_ln64(a[..., 3 * d :], wc, bc, eps_c), fast) * i
    new_cell = cell.double() * f + cand
    hidden = _gelu64(_ln64(new_cell, ws, bs, eps_s), fast) * o
    return hidden, new_cell


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("fast", [False, True])
def test_sum_lstm_matches_float64(dtype, fast):
    g = torch.Generator().manual_seed(2)
    d = 32
    args = [
        torch.randn(6, 4 * d, generator=g).to(dtype),
        torch.randn(6, 4 * d, generator=g).to(dtype),
        torch.randn(6, d, generator=g).to(dtype),
        (1 + 0.3 * torch.randn(d, generator=g)).to(dtype),
        (0.1 * torch.randn(d, generator=g)).to(dtype),
        (1 + 0.3 * torch.randn(d, generator=g)).to(dtype),
        (0.1 * torch.randn(d, generator=g)).to(dtype),
    ]
    hidden, cell = ops.sum_lstm(*args, 0.7, 1e-6, 1e-5, fast)
    ref_hidden, ref_cell = _sum_lstm64(*args, 0.7, 1e-6, 1e-5, fast)
    assert hidden.dtype == dtype and hidden.shape == (6, d) and cell.shape == (6, d)
    torch.testing.assert_close(cell.double(), ref_cell, atol=TOL[dtype] * 4, rtol=TOL[dtype])
    torch.testing.assert_close(hidden.double(), ref_hidden, atol=TOL[dtype] * 4, rtol=TOL[dtype])


def test_sum_lstm_gate_order_is_forget_input_output_candidate():
    # Forget gate wide open, input gate shut: the cell keeps its old value.
    d = 4
    big = 40.0
    states = torch.cat(
        [torch.full((1, d), big), torch.full((1, d), -big), torch.zeros(1, 2 * d)], -1
    )
    cell = torch.arange(1.0, d + 1).unsqueeze(0)
    one, zero = torch.ones(d), torch.zeros(d)
    _, new_cell = ops.sum_lstm(
        states, torch.zeros_like(states), cell, one, zero, one, zero, 1.0, 1e-6, 1e-6
    )
    torch.testing.assert_close(new_cell, cell, atol=1e-6, rtol=0)


def test_sum_lstm_refuses_mismatched_widths():
    with pytest.raises(ValueError, match=r"4\*8"):
        ops.sum_lstm_reference(
            torch.zeros(2, 30),
            torch.zeros(2, 30),
            torch.zeros(2, 8),
            *[torch.ones(8)] * 4,
            1.0,
            1e-6,
            1e-6,
        )


def test_cpu_tensors_use_the_fallback():
    assert not ops._use_kernel(torch.zeros(1))
