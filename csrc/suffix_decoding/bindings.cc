// Python bindings for the suffix tree (module arctic_inference.suffix_decoding._C).
// Token inputs may be 1-D integer arrays (numpy, torch CPU, anything with
// DLPack / buffer support) or Python sequences of ints; anything else, and any
// id outside [0, 2**31), raises ValueError instead of reaching the tree.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>
#include <string>

#include "suffix_tree.h"

namespace nb = nanobind;
using suffix::Draft;
using suffix::SuffixTree;

namespace {

[[noreturn]] void bad_value(const std::string& what) { throw nb::value_error(what.c_str()); }

inline int32_t checked(int64_t v) {
  if (v < 0 || v > INT32_MAX)
    bad_value("token ids must be in [0, 2**31); got " + std::to_string(v));
  return static_cast<int32_t>(v);
}

template <typename T>
void copy_array(const nb::ndarray<nb::ro, nb::device::cpu>& a, std::vector<int32_t>& out) {
  const size_t n = a.ndim() == 0 ? 0 : a.shape(0);
  const int64_t stride = n ? a.stride(0) : 1;
  const T* p = static_cast<const T*>(a.data());
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v = p[static_cast<int64_t>(i) * stride];
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<uint64_t>(v) > INT32_MAX)
        bad_value("token ids must be in [0, 2**31); got " + std::to_string(v));
      out[i] = static_cast<int32_t>(v);
    } else {
      out[i] = checked(static_cast<int64_t>(v));
    }
  }
}

// Convert a Python token container into `out`.
void to_tokens(nb::handle h, std::vector<int32_t>& out) {
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    PyObject* seq = h.ptr();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    out.resize(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* it = items[i];
      if (PyBool_Check(it) || !(PyLong_Check(it) || PyIndex_Check(it)))
        bad_value(std::string("token ids must be integers; got ") + Py_TYPE(it)->tp_name);
      int overflow = 0;
      long long v;
      if (PyLong_Check(it)) {
        v = PyLong_AsLongLongAndOverflow(it, &overflow);
      } else {
        PyObject* idx = PyNumber_Index(it);
        if (!idx) throw nb::python_error();
        v = PyLong_AsLongLongAndOverflow(idx, &overflow);
        Py_DECREF(idx);
      }
      if (overflow) bad_value("token id out of range [0, 2**31)");
      out[static_cast<size_t>(i)] = checked(v);
    }
    return;
  }
  nb::ndarray<nb::ro, nb::device::cpu> a;
  if (!nb::try_cast(h, a, false)) {
    bad_value(std::string("tokens must be a 1-D integer array or a list of ints; got ") +
              Py_TYPE(h.ptr())->tp_name);
  }
  if (a.ndim() > 1) bad_value("tokens must be 1-D; got ndim=" + std::to_string(a.ndim()));
  const auto dt = a.dtype();
  const bool is_int = dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int);
  const bool is_uint = dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt);
  if (dt.lanes != 1 || !(is_int || is_uint))
    bad_value("token array must have an integer dtype");
  switch ((is_int ? 0 : 100) + dt.bits) {
    case 8: copy_array<int8_t>(a, out); break;
    case 16: copy_array<int16_t>(a, out); break;
    case 32: copy_array<int32_t>(a, out); break;
    case 64: copy_array<int64_t>(a, out); break;
    case 108: copy_array<uint8_t>(a, out); break;
    case 116: copy_array<uint16_t>(a, out); break;
    case 132: copy_array<uint32_t>(a, out); break;
    case 164: copy_array<uint64_t>(a, out); break;
    default: bad_value("unsupported integer width");
  }
}

thread_local std::vector<int32_t> scratch;

nb::tuple draft_tuple(Draft&& d) {
  return nb::make_tuple(nb::cast(d.token_ids), nb::cast(d.parents), nb::cast(d.probs),
                        d.score, d.match_len);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "Native bounded-depth suffix tree for suffix decoding.";
  nb::class_<SuffixTree>(m, "SuffixTree")
      .def(
          "__init__",
          [](SuffixTree* self, int max_depth) {
            if (max_depth < 1 || max_depth > 4096)
              bad_value("max_depth must be in [1, 4096]; got " + std::to_string(max_depth));
            new (self) SuffixTree(max_depth);
          },
          nb::arg("max_depth"))
      .def_prop_ro("max_depth", &SuffixTree::max_depth)
      .def(
          "extend",
          [](SuffixTree& t, int64_t seq_id, nb::handle tokens) {
            to_tokens(tokens, scratch);
            t.extend(seq_id, scratch.data(), scratch.size());
          },
          nb::arg("seq_id"), nb::arg("tokens").none(), "Append tokens to a sequence (created if new).")
      .def("remove", &SuffixTree::remove, nb::arg("seq_id"),
           "Remove a sequence; returns False if it was not stored.")
      .def("__contains__", &SuffixTree::contains)
      .def(
          "longest_match",
          [](const SuffixTree& t, nb::handle pattern) {
            to_tokens(pattern, scratch);
            return t.longest_match(scratch.data(), scratch.size());
          },
          nb::arg("pattern").none())
      .def(
          "speculate",
          [](const SuffixTree& t, nb::handle pattern, int max_spec_tokens, double max_spec_factor,
             double max_spec_offset, double min_token_prob, bool use_tree, int64_t seq_id) {
            to_tokens(pattern, scratch);
            return draft_tuple(t.speculate(scratch.data(), scratch.size(), max_spec_tokens,
                                           max_spec_factor, max_spec_offset, min_token_prob,
                                           use_tree, seq_id));
          },
          nb::arg("pattern").none(), nb::arg("max_spec_tokens"), nb::arg("max_spec_factor"),
          nb::arg("max_spec_offset"), nb::arg("min_token_prob"), nb::arg("use_tree"),
          nb::arg("seq_id") = -1,
          "Returns (token_ids, parents, probs, score, match_len). seq_id: a stored sequence "
          "ending like the pattern (its frontier speeds up matching; the result is the same).")
      .def(
          "recover",
          [](const SuffixTree& t, nb::handle pattern, int max_spec_tokens, double max_spec_factor,
             double max_spec_offset, double min_token_prob, int max_tail, int anchor_len,
             int min_anchor, int skip, int64_t seq_id) {
            to_tokens(pattern, scratch);
            return draft_tuple(t.recover(scratch.data(), scratch.size(), max_spec_tokens,
                                         max_spec_factor, max_spec_offset, min_token_prob, max_tail,
                                         anchor_len, min_anchor, skip, seq_id));
          },
          nb::arg("pattern").none(), nb::arg("max_spec_tokens"), nb::arg("max_spec_factor"),
          nb::arg("max_spec_offset"), nb::arg("min_token_prob"), nb::arg("max_tail"),
          nb::arg("anchor_len"), nb::arg("min_anchor"), nb::arg("skip") = 1, nb::arg("seq_id") = -1,
          "Slip-recovery draft (see suffix_tree.h); (token_ids, parents, probs, score, match_len).")
      .def(
          "count",
          [](const SuffixTree& t, nb::handle path) {
            to_tokens(path, scratch);
            return t.count(scratch.data(), scratch.size());
          },
          nb::arg("path").none())
      .def(
          "continuations",
          [](const SuffixTree& t, nb::handle path) {
            to_tokens(path, scratch);
            return t.continuations(scratch.data(), scratch.size());
          },
          nb::arg("path").none())
      .def_prop_ro("num_nodes", &SuffixTree::num_nodes)
      .def_prop_ro("num_sequences", &SuffixTree::num_sequences)
      .def_prop_ro("num_tokens", &SuffixTree::num_tokens)
      .def_prop_ro("memory_bytes", &SuffixTree::memory_bytes)
      .def("check_invariants", &SuffixTree::check_invariants);
}
