// Bindings of kernel pieces that are useful on their own (distributions and
// the histogram), mostly for tests and for sampling workloads from Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/kernel/histogram.hpp"
#include "dcgym/kernel/rng.hpp"

namespace py = pybind11;

namespace dcgym::bindings {

kernel::Distribution ParseDistribution(const py::dict& d, const std::string& field) {
  using kernel::Distribution;
  const auto kind = Get<std::string>(d, "dist", field);
  using Pairs = std::vector<std::pair<double, double>>;
  if (kind == "exp") return Distribution::Exp(Get<double>(d, "mean_us", field), field);
  if (kind == "det") return Distribution::Det(Get<double>(d, "value_us", field), field);
  if (kind == "multimodal") return Distribution::Multimodal(Get<Pairs>(d, "modes", field), field);
  if (kind == "hyperexp") return Distribution::Hyperexp(Get<Pairs>(d, "phases", field), field);
  if (kind == "lognormal")
    return Distribution::Lognormal(Get<double>(d, "mean_us", field), Get<double>(d, "sigma", field), field);
  if (kind == "bounded_pareto")
    return Distribution::BoundedPareto(Get<double>(d, "alpha", field), Get<double>(d, "low_us", field),
                                       Get<double>(d, "high_us", field), field);
  if (kind == "empirical") return Distribution::Empirical(Get<Pairs>(d, "cdf", field), field);
  throw std::invalid_argument(field + ".dist: unknown distribution '" + kind +
                              "'; allowed: exp, det, multimodal, hyperexp, lognormal, "
                              "bounded_pareto, empirical");
}

}  // namespace dcgym::bindings

void BindKernel(py::module_& m) {
  using dcgym::kernel::Distribution;
  using dcgym::kernel::LogHistogram;

  m.attr("max_load") = dcgym::kernel::kMaxLoad;

  py::class_<Distribution>(m, "Distribution", "A service-time distribution of the engine.")
      .def(py::init([](const py::dict& d) { return dcgym::bindings::ParseDistribution(d, "distribution"); }),
           py::arg("config"))
      .def_property_readonly("mean", &Distribution::Mean)
      .def_property_readonly("second_moment", &Distribution::SecondMoment)
      .def_property_readonly("num_classes", &Distribution::NumClasses)
      .def(
          "sample",
          [](const Distribution& d, size_t n, uint64_t seed) {
            py::array_t<double> values(n);
            py::array_t<uint32_t> classes(n);
            auto v = values.mutable_unchecked<1>();
            auto c = classes.mutable_unchecked<1>();
            {
              py::gil_scoped_release release;
              auto rng = dcgym::kernel::MakeRng(seed, dcgym::kernel::Stream::kService);
              for (size_t i = 0; i < n; ++i) {
                const auto s = d.Draw(rng);
                v(i) = s.value;
                c(i) = s.cls;
              }
            }
            return py::make_tuple(values, classes);
          },
          py::arg("n"), py::arg("seed"), "Draw n values and their classes from the service stream of `seed`.");

  py::class_<LogHistogram>(m, "LogHistogram", "Fixed-memory log-linear histogram (max relative error 0.195%).")
      .def(py::init<>())
      .def("record",
           [](LogHistogram& h, py::array_t<double, py::array::c_style | py::array::forcecast> values) {
             auto v = values.unchecked<1>();
             for (py::ssize_t i = 0; i < v.shape(0); ++i) h.Record(v(i));
           })
      .def("quantile", &LogHistogram::Quantile, py::arg("q"))
      .def_property_readonly("count", &LogHistogram::Count)
      .def_property_readonly("mean", &LogHistogram::Mean)
      .def_property_readonly_static("max_relative_error", [](py::object) { return LogHistogram::kMaxRelativeError; })
      .def_property_readonly_static("num_buckets", [](py::object) { return LogHistogram::kNumBuckets; });
}
