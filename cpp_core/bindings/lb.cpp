// Binding of the multi-LB family's model of multi-stage servers (lb/lb_sim.hpp). The config
// arrives as the plain dict made by dcgym.envs.lb.scenario (validated there);
// the engine validates again and raises ValueError naming the field.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>

#include "convert.hpp"
#include "dcgym/lb/lb_sim.hpp"

namespace py = pybind11;

namespace dcgym::bindings {
namespace {

namespace ms = dcgym::lb;

// An integer field in [lo, hi], read before any unsigned cast so that a
// negative value is reported, not wrapped.
uint32_t GetRanged(const py::dict& d, const char* key, const std::string& field, int64_t lo, int64_t hi,
                   int64_t fallback) {
  const auto v = Get<int64_t>(d, key, field, fallback);
  if (v < lo || v > hi)
    throw std::invalid_argument((field == "config" ? "" : field + ".") + key + ": must be in [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "], got " + std::to_string(v));
  return static_cast<uint32_t>(v);
}

py::list GetListField(const py::dict& d, const char* key, const std::string& field) {
  py::object v = Required(d, key, field);
  if (!py::isinstance<py::list>(v)) throw std::invalid_argument(std::string(key) + ": must be a list");
  return v.cast<py::list>();
}

ms::LbConfig ParseLbConfig(const py::dict& d) {
  ms::LbConfig c;
  size_t i = 0;
  for (auto item : GetListField(d, "servers", "config")) {
    const std::string f = "servers[" + std::to_string(i++) + "]";
    if (!py::isinstance<py::dict>(item)) throw std::invalid_argument(f + ": must be a mapping");
    const auto g = item.cast<py::dict>();
    ms::ServerGroup sg;
    sg.count = GetRanged(g, "count", f, 1, 1 << 16, -1);
    sg.workers = GetRanged(g, "workers", f, 1, 4096, -1);
    sg.speed = Get<double>(g, "speed", f, sg.speed);
    sg.mp_level = GetRanged(g, "mp_level", f, 1, 4096, sg.mp_level);
    c.groups.push_back(sg);
  }

  if (d.contains("capacity_changes") && !d["capacity_changes"].is_none()) {
    i = 0;
    for (auto item : GetListField(d, "capacity_changes", "config")) {
      const std::string f = "capacity_changes[" + std::to_string(i++) + "]";
      if (!py::isinstance<py::dict>(item)) throw std::invalid_argument(f + ": must be a mapping");
      const auto ch = item.cast<py::dict>();
      ms::CapacityChange cc;
      cc.at_us = Get<double>(ch, "at_us", f);
      cc.group = GetRanged(ch, "group", f, 0, (1 << 16) - 1, -1);
      cc.speed = Get<double>(ch, "speed", f);
      c.capacity_changes.push_back(cc);
    }
  }

  const auto app = GetDict(d, "application", "config");
  c.app.stages = GetRanged(app, "stages", "application", 1, 64, -1);
  c.app.cpu = ParseDistribution(GetDict(app, "cpu", "application"), "application.cpu");
  if (c.app.stages > 1) {
    if (!app.contains("io") || app["io"].is_none())
      throw std::invalid_argument("application.io: missing (needed with 2 or more stages)");
    c.app.io = ParseDistribution(GetDict(app, "io", "application"), "application.io");
  }
  using Split = ms::Application::Split;
  c.app.split = Choice<Split>(Get<std::string>(app, "split", "application", std::string("uniform")),
                              "application.split", {{"uniform", Split::kUniform}, {"equal", Split::kEqual}});

  i = 0;
  for (auto item : GetListField(d, "lbs", "config")) {
    const std::string f = "lbs[" + std::to_string(i++) + "]";
    if (!py::isinstance<py::dict>(item)) throw std::invalid_argument(f + ": must be a mapping");
    const auto l = item.cast<py::dict>();
    ms::BalancerConfig lb;
    lb.policy = Choice<ms::LbPolicy>(Get<std::string>(l, "policy", f), f + ".policy",
                                     {{"ecmp", ms::LbPolicy::kEcmp},
                                      {"wcmp", ms::LbPolicy::kWcmp},
                                      {"lsq", ms::LbPolicy::kLsq},
                                      {"sed", ms::LbPolicy::kSed},
                                      {"oracle", ms::LbPolicy::kOracle},
                                      {"weights", ms::LbPolicy::kWeights}});
    lb.weights = Get<std::vector<double>>(l, "weights", f, {});
    lb.share = Get<double>(l, "share", f, lb.share);
    c.lbs.push_back(lb);
  }

  c.load = Get<double>(d, "load", "config");
  c.load_basis = Choice<ms::LoadBasis>(Get<std::string>(d, "load_basis", "config", std::string("total")), "load_basis",
                                       {{"total", ms::LoadBasis::kTotal}, {"cpu", ms::LoadBasis::kCpu}});
  c.seed = Get<uint64_t>(d, "seed", "config");
  c.backlog = GetRanged(d, "backlog", "config", 0, 1000000, c.backlog);
  c.timeout_us = Get<double>(d, "timeout_us", "config", c.timeout_us);
  if (d.contains("hop_delay_us") && !d["hop_delay_us"].is_none()) {
    const auto hop = GetDict(d, "hop_delay_us", "config");
    c.hop_min_us = Get<double>(hop, "min", "hop_delay_us");
    c.hop_max_us = Get<double>(hop, "max", "hop_delay_us");
  }
  c.decision_period_us = Get<double>(d, "decision_period_us", "config", c.decision_period_us);
  c.wait_order =
      Choice<ms::WaitOrder>(Get<std::string>(d, "cpu_wait_order", "config", std::string("fifo")), "cpu_wait_order",
                            {{"fifo", ms::WaitOrder::kFifo}, {"arrival", ms::WaitOrder::kArrival}});
  if (d.contains("observation") && !d["observation"].is_none()) {
    const auto o = GetDict(d, "observation", "config");
    c.observation.reservoir_size = GetRanged(o, "reservoir_size", "observation", 1, 1024, c.observation.reservoir_size);
    c.observation.fd_density = GetRanged(o, "fd_density", "observation", 0, 64, c.observation.fd_density);
    c.observation.fd_min_us = Get<double>(o, "fd_min_us", "observation", c.observation.fd_min_us);
    c.observation.decay_half_life_us =
        Get<double>(o, "decay_half_life_us", "observation", c.observation.decay_half_life_us);
  }
  c.warmup_flows = Get<uint64_t>(d, "warmup_flows", "config", c.warmup_flows);
  c.Validate();
  return c;
}

template <typename T, typename F>
py::array_t<T> PerServerArray(const ms::LbSim& sim, F f) {
  py::array_t<T> a(sim.NumServers());
  auto m = a.template mutable_unchecked<1>();
  for (uint32_t j = 0; j < sim.NumServers(); ++j) m(j) = f(j);
  return a;
}

py::dict LbResults(const ms::LbSim& sim) {
  const auto& c = sim.Count();
  py::dict r;
  r["flows_arrived"] = c.arrived;
  r["flows_completed"] = c.completed;
  r["flows_rejected"] = c.rejected;
  r["flows_in_flight"] = sim.InFlight();
  r["flows_warmup"] = c.warmup;
  r["events"] = c.events;
  r["sim_time_us"] = sim.Now();
  r["arrival_rate_per_us"] = sim.ArrivalRate();
  r["fct_us"] = Summary(sim.Fct());
  r["fct_served_us"] = Summary(sim.FctServed());
  const double now = sim.Now();
  py::dict s;
  s["jobs"] = PerServerArray<uint32_t>(sim, [&](uint32_t j) { return sim.ServerAt(j).Jobs(); });
  s["cpu_jobs"] = PerServerArray<uint32_t>(sim, [&](uint32_t j) { return sim.ServerAt(j).CpuJobs(); });
  s["waiting"] = PerServerArray<uint32_t>(sim, [&](uint32_t j) { return sim.ServerAt(j).Waiting(); });
  s["io_jobs"] = PerServerArray<uint32_t>(sim, [&](uint32_t j) { return sim.ServerAt(j).IoJobs(); });
  s["drain_time_us"] = PerServerArray<double>(sim, [&](uint32_t j) { return sim.DrainTime(j); });
  s["cpu_utilization"] =
      PerServerArray<double>(sim, [&](uint32_t j) { return now > 0 ? sim.ServerAt(j).CpuBusyTime(now) / now : 0.0; });
  s["dispatched"] = PerServerArray<uint64_t>(sim, [&](uint32_t j) { return sim.ServerStats()[j].dispatched; });
  s["completed"] = PerServerArray<uint64_t>(sim, [&](uint32_t j) { return sim.ServerStats()[j].completed; });
  s["rejected"] = PerServerArray<uint64_t>(sim, [&](uint32_t j) { return sim.ServerStats()[j].rejected; });
  r["servers"] = s;
  return r;
}

py::array_t<double> LbObservations(const ms::LbSim& sim) {
  py::array_t<double> a({static_cast<py::ssize_t>(sim.NumLbs()), static_cast<py::ssize_t>(sim.NumServers()),
                         static_cast<py::ssize_t>(ms::kNumObservationFeatures)});
  sim.Observe(a.mutable_data());
  return a;
}

}  // namespace
}  // namespace dcgym::bindings

void BindLb(py::module_& m) {
  using dcgym::lb::LbSim;
  namespace b = dcgym::bindings;
  namespace ms = dcgym::lb;

  m.def(
      "check_lb_config", [](const py::dict& d) { b::ParseLbConfig(d); }, py::arg("config"),
      "Validate an lb config dict in the engine; raises ValueError naming the bad field.");

  py::class_<LbSim>(m, "LbSim",
                    "The multi-stage server model of the multi-LB paper (Yao et al., CIKM 2022, App. C.1): M load "
                    "balancers over N servers with blocked-PS CPU and PS IO queues.")
      .def(py::init([](const py::dict& d) { return std::make_unique<LbSim>(b::ParseLbConfig(d)); }), py::arg("config"))
      .def(
          "run_until",
          [](LbSim& s, double t) {
            if (!(t >= s.Now()))
              throw std::invalid_argument("time_us: must be >= the current time " + std::to_string(s.Now()));
            py::gil_scoped_release release;
            s.RunUntil(t);
          },
          py::arg("time_us"), "Run until simulated time time_us. Releases the GIL.")
      .def(
          "run_flows",
          [](LbSim& s, int64_t n) {
            if (n < 0) throw std::invalid_argument("flows: must be >= 0, got " + std::to_string(n));
            py::gil_scoped_release release;
            s.RunFlows(static_cast<uint64_t>(n));
          },
          py::arg("n"), "Run until n more flows have arrived. Releases the GIL.")
      .def(
          "run_completions",
          [](LbSim& s, int64_t n) {
            if (n < 0) throw std::invalid_argument("flows: must be >= 0, got " + std::to_string(n));
            py::gil_scoped_release release;
            s.RunCompletions(static_cast<uint64_t>(n));
          },
          py::arg("n"),
          "Run until n more flows have ended (completed or rejected), the episode rule of the authors' "
          "simulator. Releases the GIL.")
      .def(
          "set_weights",
          [](LbSim& s, int64_t lb, py::array_t<double, py::array::c_style | py::array::forcecast> w) {
            if (lb < 0 || lb >= s.NumLbs())
              throw std::invalid_argument("lb: must be in [0, " + std::to_string(s.NumLbs() - 1) + "], got " +
                                          std::to_string(lb));
            if (w.ndim() != 1) throw std::invalid_argument("weights: must be a 1-D array with one weight per server");
            s.SetWeights(static_cast<uint32_t>(lb), std::vector<double>(w.data(), w.data() + w.shape(0)));
          },
          py::arg("lb"), py::arg("weights"),
          "Set load balancer lb's weights over servers (policies wcmp, sed, weights); weights: non-negative, not "
          "all zero.")
      .def(
          "weights",
          [](const LbSim& s, int64_t lb) {
            if (lb < 0 || lb >= s.NumLbs())
              throw std::invalid_argument("lb: must be in [0, " + std::to_string(s.NumLbs() - 1) + "], got " +
                                          std::to_string(lb));
            const auto& w = s.Weights(static_cast<uint32_t>(lb));
            return py::array_t<double>(static_cast<py::ssize_t>(w.size()), w.data());
          },
          py::arg("lb"), "Load balancer lb's current weights.")
      .def("observations", &b::LbObservations,
           "Each LB's view of each server over the current decision period: float64 array of shape "
           "(num_lbs, num_servers, k), features named by observation_features (times in us).")
      .def_property_readonly_static("observation_features",
                                    [](py::object) {
                                      py::list l;
                                      for (const char* name : ms::kObservationFeatures) l.append(name);
                                      return l;
                                    })
      .def_property_readonly("now_us", &LbSim::Now)
      .def_property_readonly("num_servers", &LbSim::NumServers)
      .def_property_readonly("num_lbs", &LbSim::NumLbs)
      .def_property_readonly("arrival_rate_per_us", &LbSim::ArrivalRate)
      .def("results", &b::LbResults,
           "Counters, FCT statistics (fct_us: every flow, rejected ones with the timeout; fct_served_us: served "
           "flows only) and per-server state as a dict.")
      .def(
          "fct_histogram",
          [](const LbSim& s, bool served) { return b::HistogramArrays(served ? s.FctServed() : s.Fct()); },
          py::arg("served") = false,
          "(lower bucket edges in us, counts) of the measured flows' completion times: every flow, a rejected "
          "one at the timeout (served=False), or the served flows only (served=True).");
}
