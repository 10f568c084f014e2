// The one reader of the plain Python dicts that the scenario schemas build, shared by every binding file.
//
// A binding reads and converts; it checks nothing about a value beyond what its C++ type can hold. Bounds
// and consistency are the engine's (each config's Validate(), each simulator's methods), so a C++ caller
// and the deployment runtime meet the same checks. Every error is a std::invalid_argument (ValueError in
// Python) that starts with the field's path, "dispatch.d" or "services[2].mrc.alpha", and names the value.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dcgym/kernel/distribution.hpp"
#include "dcgym/kernel/histogram.hpp"

namespace dcgym::bindings {

namespace py = pybind11;

// "parent.key", or "key" at the top level (parent "").
inline std::string Path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// "parent[i]": an item of a list.
inline std::string Item(const std::string& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

inline std::string Repr(py::handle v) { return py::str(py::repr(v)); }

// Whether `d` gives `key` a value: the schema writes None for "the default".
inline bool Has(const py::dict& d, const char* key) { return d.contains(key) && !d[key].is_none(); }

inline py::object Required(const py::dict& d, const char* key, const std::string& parent) {
  if (!Has(d, key)) throw std::invalid_argument(Path(parent, key) + ": missing");
  return d[key];
}

// A Python value as T. An integer is compared with T's range in Python first, so -1 or 2^70 is reported as
// given rather than wrapped; what range the engine allows is its Validate()'s to say.
template <typename T>
T Cast(py::handle v, const std::string& field) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!py::isinstance<py::float_>(v) && PyIndex_Check(v.ptr())) {
      const auto i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
      const py::int_ lo(std::numeric_limits<T>::min()), hi(std::numeric_limits<T>::max());
      if (i < lo || i > hi)
        throw std::invalid_argument(field + ": must be an integer in [" + std::string(py::str(lo)) + ", " +
                                    std::string(py::str(hi)) + "], got " + Repr(v));
      return i.cast<T>();
    }
  } else {
    try {
      return v.cast<T>();
    } catch (const py::cast_error&) {
    }
  }
  throw std::invalid_argument(field + ": wrong type, got " + Repr(v));
}

template <typename T>
T Get(const py::dict& d, const char* key, const std::string& parent) {
  return Cast<T>(Required(d, key, parent), Path(parent, key));
}

// `fallback` when the key is absent or None: pass the engine struct's own default, never a literal.
template <typename T>
T Get(const py::dict& d, const char* key, const std::string& parent, T fallback) {
  return Has(d, key) ? Get<T>(d, key, parent) : std::move(fallback);
}

// A count argument (a number of tasks, ticks, rows) as the unsigned type the engine takes: pybind11 alone would
// refuse a negative one with a TypeError that names no argument.
template <typename T = uint64_t>
T Count(int64_t n, const char* name) {
  if (n < 0) throw std::invalid_argument(std::string(name) + ": must be >= 0, got " + std::to_string(n));
  if (static_cast<uint64_t>(n) > std::numeric_limits<T>::max())
    throw std::invalid_argument(std::string(name) + ": must be at most " +
                                std::to_string(std::numeric_limits<T>::max()) + ", got " + std::to_string(n));
  return static_cast<T>(n);
}

inline py::dict Mapping(py::handle v, const std::string& field) {
  if (!py::isinstance<py::dict>(v)) throw std::invalid_argument(field + ": must be a mapping, got " + Repr(v));
  return py::reinterpret_borrow<py::dict>(v);
}

inline py::list Sequence(py::handle v, const std::string& field) {
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v))
    throw std::invalid_argument(field + ": must be a list, got " + Repr(v));
  return py::list(py::reinterpret_borrow<py::object>(v));
}

inline py::dict GetDict(const py::dict& d, const char* key, const std::string& parent) {
  return Mapping(Required(d, key, parent), Path(parent, key));
}

// The mapping at `key`, or an empty one when it is absent or None (every field inside then takes its default).
inline py::dict GetDictOrEmpty(const py::dict& d, const char* key, const std::string& parent) {
  return Has(d, key) ? GetDict(d, key, parent) : py::dict();
}

// The list at `key`, or an empty one when it is absent or None.
inline py::list GetListOrEmpty(const py::dict& d, const char* key, const std::string& parent) {
  return Has(d, key) ? Sequence(d[key], Path(parent, key)) : py::list();
}

// Each mapping of the list at `key` (absent or None: none) with its path "parent.key[i]" (top level: "key[i]").
template <typename F>
void ForEachItem(const py::dict& d, const char* key, const std::string& parent, F&& f) {
  const py::list items = GetListOrEmpty(d, key, parent);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string field = Item(Path(parent, key), i);
    f(Mapping(items[i], field), field);
  }
}

// Refuses a key outside `allowed`: a misspelt key would otherwise fall back to its default unnoticed.
template <typename Names>
void OnlyKeys(const py::dict& d, const std::string& parent, const Names& allowed) {
  for (auto item : d) {
    const std::string key = py::str(item.first);
    bool known = false;
    std::string list;
    for (const auto& name : allowed) {
      known = known || key == name;
      list += (list.empty() ? "" : ", ") + std::string(name);
    }
    if (!known) throw std::invalid_argument(Path(parent, key) + ": unknown field; allowed: " + list);
  }
}

inline void OnlyKeys(const py::dict& d, const std::string& parent, std::initializer_list<const char*> allowed) {
  OnlyKeys<std::initializer_list<const char*>>(d, parent, allowed);
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

// Refuses an array whose shape is not `shape`, naming it and both shapes.
inline void CheckShape(const py::array& a, const std::vector<py::ssize_t>& shape, const std::string& name) {
  bool ok = a.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = a.shape(i) == shape[i];
  if (ok) return;
  const auto show = [](const py::ssize_t* dims, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return "(" + s + (n == 1 ? ",)" : ")");
  };
  throw std::invalid_argument(name + ": must have shape " + show(shape.data(), shape.size()) + ", got " +
                              show(a.shape(), static_cast<size_t>(a.ndim())));
}

// The data of an array that must have `shape` (CheckShape), to write into.
template <typename T, int Flags>
T* Shaped(py::array_t<T, Flags>& a, const std::vector<py::ssize_t>& shape, const std::string& name) {
  CheckShape(a, shape, name);
  return a.mutable_data();
}

// A list of names (a C++ table the engine defines) as a Python list: how name tables reach the Python side.
template <typename Names>
py::list NameList(const Names& names) {
  py::list l;
  for (const auto& name : names) l.append(py::str(name));
  return l;
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

// count, mean, min, percentiles and max of a latency histogram, each value mapped by `unit` (identity: as
// recorded).
template <typename Unit>
py::dict Summary(const kernel::LogHistogram& h, Unit unit) {
  py::dict s;
  s["count"] = h.Count();
  s["mean"] = unit(h.Mean());
  s["min"] = unit(h.Min());
  s["p50"] = unit(h.Quantile(0.5));
  s["p90"] = unit(h.Quantile(0.9));
  s["p99"] = unit(h.Quantile(0.99));
  s["p999"] = unit(h.Quantile(0.999));
  s["p9999"] = unit(h.Quantile(0.9999));
  s["max"] = unit(h.Max());
  return s;
}

inline py::dict Summary(const kernel::LogHistogram& h) {
  return Summary(h, [](double v) { return v; });
}

// {"dist": "exp", "mean_us": 75} and the other forms of the scenario schema.
kernel::Distribution ParseDistribution(const py::dict& d, const std::string& field);

}  // namespace dcgym::bindings
