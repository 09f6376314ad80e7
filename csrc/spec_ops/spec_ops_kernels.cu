// CUDA kernels of the speculator's layer norm and LSTM step.
//
// One thread block per row. Everything is computed in float32 and stored in
// the input dtype, as the PyTorch fallback does, so the two agree to rounding.
// The LSTM step needs two row-wide reductions (the candidate's norm, then the
// new cell's norm); the gate values are recomputed in the last pass instead of
// being kept in shared memory, so any width fits.

#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "spec_ops.h"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}

// Sum over the block; every thread gets the result.
__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < kThreads / 32 ? partial[lane] : 0.f;
    s = warp_sum(s);
    if (lane == 0) total = s;
  }
  __syncthreads();
  float out = total;
  __syncthreads();  // partial/total may be reused by the next call
  return out;
}

__device__ __forceinline__ float gelu(float x, bool fast) {
  if (fast) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
  }
  return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
}

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }

template <typename T>
__device__ __forceinline__ float ld(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}

template <typename T>
__global__ void speculator_ln_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                     const T* __restrict__ b, T* __restrict__ y, int64_t d,
                                     float eps) {
  const T* row = x + blockIdx.x * d;
  T* out = y + blockIdx.x * d;
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float v = ld(row, j);
    sq += v * v;
  }
  const float inv = rsqrtf(block_sum(sq) / d + eps);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float v = ld(row, j) * inv;
    if (w != nullptr) v *= ld(w, j);
    if (b != nullptr) v += ld(b, j);
    out[j] = static_cast<T>(v);
  }
}

template <typename T>
struct LstmRow {
  const T* states;  // [4D]: forget, input, output, candidate
  const T* z4;
  float alpha;
  __device__ float mixed(int64_t k) const { return ld(states, k) + alpha * ld(z4, k); }
};

template <typename T>
__global__ void sum_lstm_kernel(const T* __restrict__ states, const T* __restrict__ z4,
                                const T* __restrict__ prev_cell, const T* __restrict__ w_cell,
                                const T* __restrict__ b_cell, const T* __restrict__ w_state,
                                const T* __restrict__ b_state, T* __restrict__ hidden,
                                T* __restrict__ cell, int64_t d, float alpha, float eps_cell,
                                float eps_state, bool fast) {
  const int64_t r = blockIdx.x;
  const LstmRow<T> row{states + r * 4 * d, z4 + r * 4 * d, alpha};
  const T* c0 = prev_cell + r * d;

  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float a = row.mixed(3 * d + j);
    sq += a * a;
  }
  const float inv_c = rsqrtf(block_sum(sq) / d + eps_cell);

  auto new_cell = [&](int64_t j) {
    float cand = gelu(row.mixed(3 * d + j) * inv_c * ld(w_cell, j) + ld(b_cell, j), fast);
    return ld(c0, j) * sigmoid(row.mixed(j)) + cand * sigmoid(row.mixed(d + j));
  };

  sq = 0.f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float c = new_cell(j);
    cell[r * d + j] = static_cast<T>(c);
    sq += c * c;
  }
  const float inv_s = rsqrtf(block_sum(sq) / d + eps_state);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float c = new_cell(j);  // recomputed in float32: identical to the stored value's source
    float s = gelu(c * inv_s * ld(w_state, j) + ld(b_state, j), fast);
    hidden[r * d + j] = static_cast<T>(s * sigmoid(row.mixed(2 * d + j)));
  }
}

void check_vector(const torch::Tensor& t, const torch::Tensor& like, int64_t d, const char* name) {
  TORCH_CHECK(t.is_cuda() && t.dim() == 1 && t.size(0) == d && t.scalar_type() == like.scalar_type(),
              name, " must be a CUDA vector of ", d, " elements of the input's dtype");
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
}

}  // namespace

torch::Tensor speculator_ln(const torch::Tensor& x, const std::optional<torch::Tensor>& weight,
                            const std::optional<torch::Tensor>& bias, double eps) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "speculator_ln: x must be a contiguous CUDA tensor");
  const int64_t d = x.size(-1);
  TORCH_CHECK(weight.has_value() == bias.has_value(), "speculator_ln: weight and bias go together");
  if (weight) {
    check_vector(*weight, x, d, "speculator_ln weight");
    check_vector(*bias, x, d, "speculator_ln bias");
  }
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty_like(x);
  const int64_t rows = x.numel() / d;
  if (rows == 0) return y;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "speculator_ln", [&] {
    speculator_ln_kernel<scalar_t><<<rows, kThreads, 0, stream>>>(
        x.data_ptr<scalar_t>(), weight ? weight->data_ptr<scalar_t>() : nullptr,
        bias ? bias->data_ptr<scalar_t>() : nullptr, y.data_ptr<scalar_t>(), d,
        static_cast<float>(eps));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

std::tuple<torch::Tensor, torch::Tensor> sum_lstm(
    const torch::Tensor& states, const torch::Tensor& z4, const torch::Tensor& prev_cell,
    const torch::Tensor& w_cell, const torch::Tensor& b_cell, const torch::Tensor& w_state,
    const torch::Tensor& b_state, double alpha, double eps_cell, double eps_state,
    bool use_fast_gelu) {
  TORCH_CHECK(states.is_cuda() && states.dim() == 2 && states.is_contiguous(),
              "sum_lstm: states must be a contiguous [rows, 4*D] CUDA tensor");
  const int64_t d = prev_cell.size(-1);
  TORCH_CHECK(states.size(1) == 4 * d, "sum_lstm: states width ", states.size(1), " != 4*", d);
  TORCH_CHECK(z4.sizes() == states.sizes() && z4.is_contiguous() &&
                  z4.scalar_type() == states.scalar_type(),
              "sum_lstm: z4 must match states");
  TORCH_CHECK(prev_cell.dim() == 2 && prev_cell.size(0) == states.size(0) &&
                  prev_cell.is_contiguous() && prev_cell.scalar_type() == states.scalar_type(),
              "sum_lstm: prev_cell must be a contiguous [rows, D] tensor of the states' dtype");
  check_vector(w_cell, states, d, "sum_lstm w_cell");
  check_vector(b_cell, states, d, "sum_lstm b_cell");
  check_vector(w_state, states, d, "sum_lstm w_state");
  check_vector(b_state, states, d, "sum_lstm b_state");
  const c10::cuda::CUDAGuard guard(states.device());
  auto hidden = torch::empty_like(prev_cell);
  auto cell = torch::empty_like(prev_cell);
  const int64_t rows = states.size(0);
  if (rows == 0) return {hidden, cell};
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, states.scalar_type(), "sum_lstm", [&] {
    sum_lstm_kernel<scalar_t><<<rows, kThreads, 0, stream>>>(
        states.data_ptr<scalar_t>(), z4.data_ptr<scalar_t>(), prev_cell.data_ptr<scalar_t>(),
        w_cell.data_ptr<scalar_t>(), b_cell.data_ptr<scalar_t>(), w_state.data_ptr<scalar_t>(),
        b_state.data_ptr<scalar_t>(), hidden.data_ptr<scalar_t>(), cell.data_ptr<scalar_t>(), d,
        static_cast<float>(alpha), static_cast<float>(eps_cell), static_cast<float>(eps_state),
        use_fast_gelu);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {hidden, cell};
}
