// Registers the speculator ops as torch.ops.arctic_inference.* when the module is imported.
#include <Python.h>
#include <torch/library.h>

#include "spec_ops.h"

TORCH_LIBRARY(arctic_inference, m) {
  m.def("speculator_ln(Tensor x, Tensor? weight, Tensor? bias, float eps) -> Tensor");
  m.def(
      "sum_lstm(Tensor states, Tensor z4, Tensor prev_cell, Tensor w_cell, Tensor b_cell, "
      "Tensor w_state, Tensor b_state, float alpha, float eps_cell, float eps_state, "
      "bool use_fast_gelu) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(arctic_inference, CUDA, m) {
  m.impl("speculator_ln", &speculator_ln);
  m.impl("sum_lstm", &sum_lstm);
}

// An importable module with nothing in it: importing it runs the registrations above.
static PyModuleDef spec_ops_module = {PyModuleDef_HEAD_INIT, "_spec_ops", nullptr, -1, nullptr};

PyMODINIT_FUNC PyInit__spec_ops(void) { return PyModule_Create(&spec_ops_module); }
