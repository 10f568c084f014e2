// Bindings of the deployment runtime (dcgym/runtime/policy_file.hpp): load a
// policy file from bytes or a path and evaluate it on numpy arrays, so Python
// can check exported policies against the modules they came from. Loader
// errors become ValueError with the loader's message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dcgym/runtime/policy_file.hpp"

namespace py = pybind11;

namespace {

using dcgym::runtime::Policy;
using dcgym::runtime::PolicyKind;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

/// A loaded policy file, as Python sees it.
class RuntimePolicy {
 public:
  explicit RuntimePolicy(Policy policy) : policy_(std::move(policy)) {}

  static RuntimePolicy FromBytes(const py::bytes& data) {
    const std::string bytes = data;
    Policy policy;
    std::string error;
    if (!dcgym::runtime::ParsePolicy(bytes.data(), bytes.size(), &policy, &error)) throw py::value_error(error);
    return RuntimePolicy(std::move(policy));
  }

  static RuntimePolicy FromFile(const std::string& path) {
    Policy policy;
    std::string error;
    if (!dcgym::runtime::LoadPolicyFile(path, &policy, &error)) throw py::value_error(error);
    return RuntimePolicy(std::move(policy));
  }

  std::string kind() const { return std::string(dcgym::runtime::PolicyKindName(policy_.kind())); }
  std::size_t num_agents() const { return policy_.num_agents(); }
  /// The settings the policy was trained under (format version 3), name -> value.
  py::dict settings() const {
    py::dict out;
    for (const auto& [key, value] : policy_.settings()) out[py::str(key)] = value;
    return out;
  }

  /// The loads each linear evaluation takes (N), or the MLP's observation size (D).
  std::size_t num_inputs() {
    if (auto* p = policy_.linear_pair()) return p->num_nodes();
    if (auto* v = policy_.linear_value()) return v->num_loads();
    if (auto* f = policy_.fill()) return f->num_nodes();
    return policy_.mlp()->num_inputs();
  }

  py::tuple Probabilities(std::size_t node, const FloatArray& raw_loads) {
    auto* pair = policy_.linear_pair();
    if (pair == nullptr) throw py::value_error("probabilities: the policy is " + kind() + "; expected linear_pair");
    CheckAgent("node", node, pair->num_nodes());
    const std::size_t n = pair->num_nodes();
    const auto [rows, batched] = Rows(raw_loads, n, "raw_loads");
    FloatArray migration(Shape(rows, n, batched)), stealing(Shape(rows, n, batched));
    const float* in = raw_loads.data();
    float* mig = migration.mutable_data();
    float* steal = stealing.mutable_data();
    for (std::size_t b = 0; b < rows; ++b) pair->Probabilities(node, in + b * n, mig + b * n, steal + b * n);
    return py::make_tuple(migration, stealing);
  }

  /// The fill kind's (migration, stealing) tables of `node` for levels (N,) or (B, N) and the rack's arrivals
  /// per heartbeat (a number > 0).
  py::tuple FillTables(std::size_t node, const DoubleArray& levels, double arrivals) {
    auto* fill = policy_.fill();
    if (fill == nullptr) throw py::value_error("fill_tables: the policy is " + kind() + "; expected fill");
    CheckAgent("node", node, fill->num_nodes());
    if (!(std::isfinite(arrivals) && arrivals > 0)) {
      throw py::value_error("arrivals: got " + std::to_string(arrivals) + "; expected a finite number > 0");
    }
    const std::size_t n = fill->num_nodes();
    const bool ok =
        (levels.ndim() == 1 || levels.ndim() == 2) && static_cast<std::size_t>(levels.shape(levels.ndim() - 1)) == n;
    if (!ok)
      throw py::value_error("levels: expected shape (" + std::to_string(n) + ",) or (B, " + std::to_string(n) + ")");
    const std::size_t rows = levels.ndim() == 1 ? 1 : static_cast<std::size_t>(levels.shape(0));
    const double* in = levels.data();
    for (std::size_t i = 0; i < rows * n; ++i) {
      if (!std::isfinite(in[i])) throw py::value_error("levels: got a non-finite level; expected finite numbers");
    }
    DoubleArray migration(Shape(rows, n, levels.ndim() == 2)), stealing(Shape(rows, n, levels.ndim() == 2));
    for (std::size_t b = 0; b < rows; ++b) {
      fill->Tables(node, in + b * n, arrivals, migration.mutable_data() + b * n, stealing.mutable_data() + b * n);
    }
    return py::make_tuple(migration, stealing);
  }

  py::object Value(std::size_t agent, const FloatArray& raw_loads) {
    auto* pair = policy_.linear_pair();
    auto* linear = policy_.linear_value();
    std::size_t n = 0;
    std::size_t agents = 0;
    if (pair != nullptr) {
      if (!pair->has_critic()) throw py::value_error("value: the linear_pair policy has no critic");
      n = agents = pair->num_nodes();
    } else if (linear != nullptr) {
      n = linear->num_loads();
      agents = linear->num_agents();
    } else {
      throw py::value_error("value: the policy is " + kind() + "; expected linear_pair or linear_value");
    }
    CheckAgent("agent", agent, agents);
    const auto [rows, batched] = Rows(raw_loads, n, "raw_loads");
    py::array_t<float> values(static_cast<py::ssize_t>(rows));
    float* out = values.mutable_data();
    for (std::size_t b = 0; b < rows; ++b) {
      const float* x = raw_loads.data() + b * n;
      out[b] = pair != nullptr ? pair->Value(agent, x) : linear->Value(agent, x);
    }
    if (!batched) return py::float_(out[0]);
    return std::move(values);
  }

  /// The head's outputs (K per observation) and the discrete actions (-1 for continuous heads).
  std::pair<FloatArray, py::array_t<std::int64_t>> Run(const FloatArray& obs, std::size_t agent) {
    auto* mlp = policy_.mlp();
    if (mlp == nullptr) throw py::value_error("act: the policy is " + kind() + "; expected mlp");
    CheckAgent("agent", agent, mlp->num_agents());
    const std::size_t d = mlp->num_inputs(), k = mlp->num_outputs();
    const auto [rows, batched] = Rows(obs, d, "obs");
    FloatArray outputs(Shape(rows, k, batched));
    py::array_t<std::int64_t> actions(static_cast<py::ssize_t>(rows));
    float* out = outputs.mutable_data();
    std::int64_t* act = actions.mutable_data();
    for (std::size_t b = 0; b < rows; ++b) act[b] = mlp->Act(agent, obs.data() + b * d, out + b * k);
    return {outputs, actions};
  }

  py::object Act(const FloatArray& obs, std::size_t agent) {
    auto [outputs, actions] = Run(obs, agent);
    const auto* mlp = policy_.mlp();
    if (mlp->head() == dcgym::runtime::Head::kMultiCategorical) {  // each group's argmax: (G,) or (B, G)
      const std::size_t k = mlp->num_outputs(), g = mlp->groups().size();
      const std::size_t rows = obs.ndim() == 1 ? 1 : static_cast<std::size_t>(obs.shape(0));
      py::array_t<std::int64_t> choices(Shape(rows, g, obs.ndim() == 2));
      for (std::size_t b = 0; b < rows; ++b) mlp->GroupArgmax(outputs.data() + b * k, choices.mutable_data() + b * g);
      return std::move(choices);
    }
    if (!dcgym::runtime::HeadIsDiscrete(mlp->head())) return std::move(outputs);
    if (obs.ndim() == 1) return py::int_(actions.at(0));
    return std::move(actions);
  }

  std::string head() {
    auto* mlp = policy_.mlp();
    if (mlp == nullptr) throw py::value_error("head: the policy is " + kind() + "; expected mlp");
    return std::string(dcgym::runtime::HeadName(mlp->head()));
  }

 private:
  static void CheckAgent(const char* what, std::size_t i, std::size_t count) {
    if (i >= count) {
      throw py::value_error(std::string(what) + ": got " + std::to_string(i) + "; expected 0 .. " +
                            std::to_string(count - 1));
    }
  }

  /// (rows, batched) of a (width,) or (rows, width) input.
  static std::pair<std::size_t, bool> Rows(const FloatArray& a, std::size_t width, const char* what) {
    const bool ok = (a.ndim() == 1 || a.ndim() == 2) && static_cast<std::size_t>(a.shape(a.ndim() - 1)) == width;
    if (!ok) {
      std::string shape;
      for (py::ssize_t i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape(i));
      throw py::value_error(std::string(what) + ": got shape (" + shape + "); expected (" + std::to_string(width) +
                            ",) or (B, " + std::to_string(width) + ")");
    }
    return {a.ndim() == 1 ? 1 : static_cast<std::size_t>(a.shape(0)), a.ndim() == 2};
  }

  static std::vector<py::ssize_t> Shape(std::size_t rows, std::size_t width, bool batched) {
    if (batched) return {static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(width)};
    return {static_cast<py::ssize_t>(width)};
  }

  Policy policy_;
};

}  // namespace

void BindRuntime(py::module_& m) {
  py::class_<RuntimePolicy>(m, "RuntimePolicy",
                            "A policy file loaded by the C++ deployment runtime (dcgym/runtime/policy_file.hpp).")
      .def_static("from_bytes", &RuntimePolicy::FromBytes, py::arg("data"),
                  "Load a policy file's bytes; ValueError naming the bad field if it is not valid.")
      .def_static("from_file", &RuntimePolicy::FromFile, py::arg("path"),
                  "Load the policy file at `path`; ValueError naming the bad field if it is not valid.")
      .def_property_readonly("kind", &RuntimePolicy::kind, "linear_pair, mlp, linear_value or fill")
      .def_property_readonly("num_agents", &RuntimePolicy::num_agents)
      .def_property_readonly("settings", &RuntimePolicy::settings,
                             "the settings the policy was trained under (name -> text; empty before version 3)")
      .def_property_readonly("num_inputs", &RuntimePolicy::num_inputs,
                             "N loads for the linear kinds, the observation size for mlp")
      .def_property_readonly("head", &RuntimePolicy::head, "the mlp's output head")
      .def("probabilities", &RuntimePolicy::Probabilities, py::arg("node"), py::arg("raw_loads"),
           "Node `node`'s (migration, stealing) probabilities for raw loads (N,) or (B, N).")
      .def("fill_tables", &RuntimePolicy::FillTables, py::arg("node"), py::arg("levels"), py::arg("arrivals"),
           "The fill kind's (migration, stealing) tables of `node` for levels in mean service times (N,) or (B, N) "
           "and the rack's arrivals per heartbeat (> 0): water-filling with the file's gains.")
      .def("value", &RuntimePolicy::Value, py::arg("agent"), py::arg("raw_loads"),
           "The linear value (critic) of `agent` for raw loads (N,) -> float or (B, N) -> (B,).")
      .def(
          "outputs", [](RuntimePolicy& p, const FloatArray& obs, std::size_t agent) { return p.Run(obs, agent).first; },
          py::arg("obs"), py::arg("agent") = 0,
          "The mlp head's outputs (probabilities, Q-values or the continuous action) for obs (D,) or (B, D).")
      .def("act", &RuntimePolicy::Act, py::arg("obs"), py::arg("agent") = 0,
           "The mlp's action: an int (array of B) for the discrete heads, each group's argmax (G,) or (B, G) for "
           "multi_categorical, the outputs for the continuous ones.");
}
