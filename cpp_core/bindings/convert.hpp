// Reading plain Python dicts into engine structs, with errors that name the
// field. Shared by the binding files.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dcgym/kernel/distribution.hpp"

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
    throw std::invalid_argument(field + "." + key + ": wrong type, got " +
                                std::string(py::str(py::repr(v))));
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

// {"dist": "exp", "mean_us": 75} and the other forms of the scenario schema.
kernel::Distribution ParseDistribution(const py::dict& d, const std::string& field);

}  // namespace dcgym::bindings
