// Fused ops of the Arctic speculator (CUDA). Definitions: arctic_inference/vllm/spec_dec/ops.py.
#pragma once

#include <torch/types.h>

#include <optional>
#include <tuple>

// RMS normalisation of the last axis with an optional affine part.
torch::Tensor speculator_ln(const torch::Tensor& x, const std::optional<torch::Tensor>& weight,
                            const std::optional<torch::Tensor>& bias, double eps);

// One LSTM speculator step: returns (hidden, cell), both [rows, D].
std::tuple<torch::Tensor, torch::Tensor> sum_lstm(
    const torch::Tensor& states, const torch::Tensor& z4, const torch::Tensor& prev_cell,
    const torch::Tensor& w_cell, const torch::Tensor& b_cell, const torch::Tensor& w_state,
    const torch::Tensor& b_state, double alpha, double eps_cell, double eps_state,
    bool use_fast_gelu);
