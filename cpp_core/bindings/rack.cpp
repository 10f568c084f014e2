// Binding of the rack simulator. The config arrives as the plain dict made by
// dcgym.envs.scenario (already validated there); the engine validates again.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "convert.hpp"
#include "dcgym/rack/rack_sim.hpp"

namespace py = pybind11;

namespace dcgym::bindings {
namespace {

using namespace dcgym::rack;

template <typename E>
E Choice(const std::string& value, const std::string& field,
         std::initializer_list<std::pair<const char*, E>> options) {
  std::string allowed;
  for (const auto& [name, e] : options) {
    if (value == name) return e;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  throw std::invalid_argument(field + ": unknown value '" + value + "'; allowed: " + allowed);
}

RackConfig ParseRackConfig(const py::dict& d) {
  RackConfig c;
  py::object nodes = Required(d, "nodes", "config");
  if (!py::isinstance<py::list>(nodes)) throw std::invalid_argument("nodes: must be a list of node groups");
  size_t i = 0;
  for (auto item : nodes.cast<py::list>()) {
    const std::string f = "nodes[" + std::to_string(i++) + "]";
    if (!py::isinstance<py::dict>(item)) throw std::invalid_argument(f + ": must be a mapping");
    auto g = item.cast<py::dict>();
    NodeGroup ng;
    const auto count = Get<int64_t>(g, "count", f), workers = Get<int64_t>(g, "workers", f);
    if (count < 1 || count > (1 << 20)) throw std::invalid_argument(f + ".count: must be in [1, 1048576], got " + std::to_string(count));
    if (workers < 1 || workers > (1 << 16)) throw std::invalid_argument(f + ".workers: must be in [1, 65536], got " + std::to_string(workers));
    ng.count = static_cast<uint32_t>(count);
    ng.workers = static_cast<uint32_t>(workers);
    ng.speed = Get<double>(g, "speed", f, 1.0);
    ng.queue_capacity = Get<int64_t>(g, "queue_capacity", f, -1);
    c.groups.push_back(ng);
  }
  c.service = ParseDistribution(GetDict(d, "service", "config"), "service");
  c.load = Get<double>(d, "load", "config");
  c.seed = Get<uint64_t>(d, "seed", "config");
  c.warmup_tasks = Get<uint64_t>(d, "warmup_tasks", "config", 0);

  const auto intra = GetDict(d, "intra_node", "config");
  c.intra.discipline = Choice<Discipline>(Get<std::string>(intra, "discipline", "intra_node"),
                                          "intra_node.discipline", {{"fcfs", Discipline::kFcfs}, {"ps", Discipline::kPs}});
  c.intra.quantum_us = Get<double>(intra, "quantum_us", "intra_node", 0.0);
  c.intra.switch_cost_us = Get<double>(intra, "switch_cost_us", "intra_node", 0.0);

  const auto disp = GetDict(d, "dispatch", "config");
  c.dispatch.kind = Choice<DispatchKind>(Get<std::string>(disp, "policy", "dispatch"), "dispatch.policy",
                                         {{"random", DispatchKind::kRandom},
                                          {"round_robin", DispatchKind::kRoundRobin},
                                          {"po_d", DispatchKind::kPowerOfD},
                                          {"jsq", DispatchKind::kJsq},
                                          {"central_fcfs", DispatchKind::kCentralFcfs}});
  const auto dd = Get<int64_t>(disp, "d", "dispatch", 2);
  if (dd < 1 || dd > 64) throw std::invalid_argument("dispatch.d: must be in [1, 64], got " + std::to_string(dd));
  c.dispatch.d = static_cast<uint32_t>(dd);
  c.dispatch.replace = Get<bool>(disp, "replace", "dispatch", true);
  c.dispatch.metric = Choice<LoadMetric>(Get<std::string>(disp, "metric", "dispatch", std::string("outstanding")),
                                         "dispatch.metric",
                                         {{"outstanding", LoadMetric::kOutstanding}, {"queue", LoadMetric::kQueue}});
  c.dispatch.rtt_us = Get<double>(disp, "rtt_us", "dispatch", 0.0);
  if (d.contains("load_info")) {
    const auto li = GetDict(d, "load_info", "config");
    Choice<LoadInfoKind>(Get<std::string>(li, "model", "load_info", std::string("fresh")), "load_info.model",
                         {{"fresh", LoadInfoKind::kFresh}});
  }
  c.Validate();
  return c;
}

py::dict Summary(const kernel::LogHistogram& h) {
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

py::dict Results(const RackSim& sim) {
  const auto& c = sim.Counters();
  py::dict r;
  r["tasks_arrived"] = c.arrived;
  r["tasks_completed"] = c.completed;
  r["tasks_dropped"] = c.dropped;
  r["tasks_in_flight"] = sim.InFlight();
  r["tasks_warmup"] = c.warmup;
  r["events"] = c.events;
  r["sim_time_us"] = sim.Now();
  r["arrival_rate_per_us"] = sim.ArrivalRate();
  r["latency_us"] = Summary(sim.Latency());
  py::list by_class;
  for (uint32_t k = 0; k < sim.NumClasses(); ++k) by_class.append(Summary(sim.LatencyOfClass(k)));
  r["latency_by_class_us"] = by_class;
  const auto& w = sim.Starts();
  py::dict wait;
  wait["count"] = w.started;
  wait["mean"] = w.started ? w.wait_sum / static_cast<double>(w.started) : std::nan("");
  wait["p_wait"] = w.started ? static_cast<double>(w.waited) / static_cast<double>(w.started) : std::nan("");
  r["wait_us"] = wait;

  const uint32_t n = sim.NumNodes();
  py::array_t<uint64_t> completed(n), dropped(n), outstanding(n);
  py::array_t<double> utilization(n);
  auto cm = completed.mutable_unchecked<1>();
  auto dm = dropped.mutable_unchecked<1>();
  auto om = outstanding.mutable_unchecked<1>();
  auto um = utilization.mutable_unchecked<1>();
  for (uint32_t i = 0; i < n; ++i) {
    const auto& nc = sim.NodeStats()[i];
    const auto& nd = sim.NodeAt(i);
    cm(i) = nc.completed;
    dm(i) = nc.dropped;
    om(i) = nd.Outstanding();
    um(i) = sim.Now() > 0 ? nd.WorkStarted() / (nd.Workers() * nd.Speed() * sim.Now()) : 0.0;
  }
  py::dict nodes;
  nodes["completed"] = completed;
  nodes["dropped"] = dropped;
  nodes["outstanding"] = outstanding;
  nodes["utilization"] = utilization;
  r["nodes"] = nodes;
  return r;
}

}  // namespace
}  // namespace dcgym::bindings

void BindRack(py::module_& m) {
  using dcgym::rack::RackSim;
  namespace b = dcgym::bindings;

  m.def("check_rack_config", [](const py::dict& d) { b::ParseRackConfig(d); }, py::arg("config"),
        "Validate a rack config dict in the engine; raises ValueError naming the bad field.");

  py::class_<RackSim>(m, "RackSim", "A rack simulation (see dcgym.cpp_core.RackSim).")
      .def(py::init([](const py::dict& d) { return std::make_unique<RackSim>(b::ParseRackConfig(d)); }),
           py::arg("config"))
      .def(
          "run_tasks",
          [](RackSim& s, int64_t n) {
            if (n < 0) throw std::invalid_argument("tasks: must be >= 0, got " + std::to_string(n));
            py::gil_scoped_release release;
            s.RunTasks(static_cast<uint64_t>(n));
          },
          py::arg("n"), "Run until n more tasks have arrived. Releases the GIL.")
      .def(
          "run_until",
          [](RackSim& s, double t) {
            if (!(t >= s.Now())) throw std::invalid_argument("time_us: must be >= the current time " + std::to_string(s.Now()));
            py::gil_scoped_release release;
            s.RunUntil(t);
          },
          py::arg("time_us"), "Run until simulated time time_us. Releases the GIL.")
      .def_property_readonly("now_us", &RackSim::Now)
      .def_property_readonly("num_nodes", &RackSim::NumNodes)
      .def("results", &b::Results, "Counters and latency statistics as a dict.")
      .def("latency_histogram",
           [](const RackSim& s) {
             const auto& counts = s.Latency().Counts();
             const size_t n = counts.size();
             py::array_t<double> lower(n);
             py::array_t<uint64_t> cnt(n);
             auto l = lower.mutable_unchecked<1>();
             auto c = cnt.mutable_unchecked<1>();
             for (size_t i = 0; i < n; ++i) {
               l(i) = dcgym::kernel::LogHistogram::Lower(static_cast<int>(i));
               c(i) = counts[i];
             }
             return py::make_tuple(lower, cnt);
           },
           "(lower bucket edges in us, counts) of the measured latencies.");
}
