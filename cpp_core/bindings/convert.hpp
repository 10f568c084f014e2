// Reading plain Python dicts into engine structs, with errors that name the
// field. Shared by the binding files.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dcgym/kernel/distribution.hpp"
#include "dcgym/kernel/histogram.hpp"

namespace dcgym::bindings {

namespace py = pybind11;

inline py::object Required(const py::dict& d, const char* key, const std::string& field) {
  if (!d.contains(key)) throw std::invalid_argument(field + "." + key + ": missing");
  return d[key];
}

template <typename T>
T Get(const py::dict& d, const char* key, const std::string& field) {
  py::object v = Required(d, key, field);
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    throw std::invalid_argument(field + "." + key + ": wrong type, got " + std::string(py::str(py::repr(v))));
  }
}

template <typename T>
T Get(const py::dict& d, const char* key, const std::string& field, T fallback) {
  if (!d.contains(key) || d[key].is_none()) return fallback;
  return Get<T>(d, key, field);
}

inline py::dict GetDict(const py::dict& d, const char* key, const std::string& field) {
  py::object v = Required(d, key, field);
  if (!py::isinstance<py::dict>(v)) throw std::invalid_argument(field + "." + key + ": must be a mapping");
  return v.cast<py::dict>();
}

// One of a fixed set of names, mapped to its enum value.
template <typename E>
E Choice(const std::string& value, const std::string& field, std::initializer_list<std::pair<const char*, E>> options) {
  std::string allowed;
  for (const auto& [name, e] : options) {
    if (value == name) return e;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  throw std::invalid_argument(field + ": unknown value '" + value + "'; allowed: " + allowed);
}

// (lower bucket edges, counts) of a histogram as two numpy arrays, every bucket included.
inline py::tuple HistogramArrays(const kernel::LogHistogram& h) {
  const auto& counts = h.Counts();
  const size_t n = counts.size();
  py::array_t<double> lower(static_cast<py::ssize_t>(n));
  py::array_t<uint64_t> cnt(static_cast<py::ssize_t>(n));
  auto l = lower.mutable_unchecked<1>();
  auto c = cnt.mutable_unchecked<1>();
  for (size_t i = 0; i < n; ++i) {
    l(static_cast<py::ssize_t>(i)) = kernel::LogHistogram::Lower(static_cast<int>(i));
    c(static_cast<py::ssize_t>(i)) = counts[i];
  }
  return py::make_tuple(lower, cnt);
}

// count, mean, min, percentiles and max of a latency histogram.
inline py::dict Summary(const kernel::LogHistogram& h) {
  py::dict s;
  s["count"] = h.Count();
  s["mean"] = h.Mean();
  s["min"] = h.Min();
  s["p50"] = h.Quantile(0.5);
  s["p90"] = h.Quantile(0.9);
  s["p99"] = h.Quantile(0.99);
  s["p999"] = h.Quantile(0.999);
  s["p9999"] = h.Quantile(0.9999);
  s["max"] = h.Max();
  return s;
}

// {"dist": "exp", "mean_us": 75} and the other forms of the scenario schema.
kernel::Distribution ParseDistribution(const py::dict& d, const std::string& field);

}  // namespace dcgym::bindings
