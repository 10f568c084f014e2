// Binding of the lb family's model of multi-stage servers (lb/lb_sim.hpp). The config arrives as
// the plain dict made by dcgym.envs.lb.scenario (validated there); the engine validates again
// (LbConfig::Validate) and raises ValueError naming the field.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>

#include "convert.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/lb/lb_sim.hpp"

namespace py = pybind11;
using namespace pybind11::literals;  // "name"_a, for the limits

namespace dcgym::bindings {
namespace {

using namespace dcgym::lb;

LbConfig ParseLbConfig(const py::dict& d) {
  LbConfig c;
  ForEachItem(d, "servers", "", [&](const py::dict& g, const std::string& f) {
    ServerGroup sg;
    sg.count = Get<uint32_t>(g, "count", f);
    sg.workers = Get<uint32_t>(g, "workers", f);
    sg.speed = Get<double>(g, "speed", f, sg.speed);
    sg.mp_level = Get<uint32_t>(g, "mp_level", f, sg.mp_level);
    c.groups.push_back(sg);
  });
  ForEachItem(d, "capacity_changes", "", [&](const py::dict& ch, const std::string& f) {
    CapacityChange cc;
    cc.at_us = Get<double>(ch, "at_us", f);
    cc.group = Get<uint32_t>(ch, "group", f);
    cc.speed = Get<double>(ch, "speed", f);
    c.capacity_changes.push_back(cc);
  });

  const auto app = GetDict(d, "application", "");
  c.app.stages = Get<uint32_t>(app, "stages", "application");
  c.app.cpu = ParseDistribution(GetDict(app, "cpu", "application"), "application.cpu");
  if (c.app.stages > 1) {
    if (!Has(app, "io")) throw std::invalid_argument("application.io: missing (needed with 2 or more stages)");
    c.app.io = ParseDistribution(GetDict(app, "io", "application"), "application.io");
  }
  using Split = Application::Split;
  if (Has(app, "split"))
    c.app.split = Choice<Split>(Get<std::string>(app, "split", "application"), "application.split",
                                {{"uniform", Split::kUniform}, {"equal", Split::kEqual}});

  ForEachItem(d, "lbs", "", [&](const py::dict& l, const std::string& f) {
    BalancerConfig lb;
    lb.policy = Choice<LbPolicy>(Get<std::string>(l, "policy", f), Path(f, "policy"),
                                 {{"ecmp", LbPolicy::kEcmp},
                                  {"wcmp", LbPolicy::kWcmp},
                                  {"lsq", LbPolicy::kLsq},
                                  {"sed", LbPolicy::kSed},
                                  {"oracle", LbPolicy::kOracle},
                                  {"weights", LbPolicy::kWeights}});
    lb.weights = Get<std::vector<double>>(l, "weights", f, lb.weights);
    lb.share = Get<double>(l, "share", f, lb.share);
    c.lbs.push_back(lb);
  });

  c.load = Get<double>(d, "load", "");
  if (Has(d, "load_basis"))
    c.load_basis = Choice<LoadBasis>(Get<std::string>(d, "load_basis", ""), "load_basis",
                                     {{"total", LoadBasis::kTotal}, {"cpu", LoadBasis::kCpu}});
  c.seed = Get<uint64_t>(d, "seed", "");
  c.backlog = Get<uint32_t>(d, "backlog", "", c.backlog);
  c.timeout_us = Get<double>(d, "timeout_us", "", c.timeout_us);
  if (Has(d, "hop_delay_us")) {
    const auto hop = GetDict(d, "hop_delay_us", "");
    c.hop_min_us = Get<double>(hop, "min", "hop_delay_us");
    c.hop_max_us = Get<double>(hop, "max", "hop_delay_us");
  }
  c.decision_period_us = Get<double>(d, "decision_period_us", "", c.decision_period_us);
  if (Has(d, "cpu_wait_order"))
    c.wait_order = Choice<WaitOrder>(Get<std::string>(d, "cpu_wait_order", ""), "cpu_wait_order",
                                     {{"fifo", WaitOrder::kFifo}, {"arrival", WaitOrder::kArrival}});
  const auto o = GetDictOrEmpty(d, "observation", "");
  c.observation.reservoir_size = Get<uint32_t>(o, "reservoir_size", "observation", c.observation.reservoir_size);
  c.observation.fd_density = Get<uint32_t>(o, "fd_density", "observation", c.observation.fd_density);
  c.observation.fd_min_us = Get<double>(o, "fd_min_us", "observation", c.observation.fd_min_us);
  c.observation.decay_half_life_us =
      Get<double>(o, "decay_half_life_us", "observation", c.observation.decay_half_life_us);
  c.warmup_flows = Get<uint64_t>(d, "warmup_flows", "", c.warmup_flows);
  c.measure_flows = Get<uint64_t>(d, "measure_flows", "", c.measure_flows);
  c.record_flows = Get<bool>(d, "record_flows", "", c.record_flows);
  c.Validate();
  return c;
}

template <typename T, typename F>
py::array_t<T> PerServerArray(const LbSim& sim, F f) {
  py::array_t<T> a(sim.NumServers());
  auto m = a.template mutable_unchecked<1>();
  for (uint32_t j = 0; j < sim.NumServers(); ++j) m(j) = f(j);
  return a;
}

py::dict LbResults(const LbSim& sim) {
  const auto& c = sim.Count();
  py::dict r;
  r["flows_arrived"] = c.arrived;
  r["flows_completed"] = c.completed;
  r["flows_rejected"] = c.rejected;
  r["flows_in_flight"] = sim.InFlight();
  r["flows_warmup"] = c.warmup;
  r["flows_measured_pending"] = sim.MeasuredPending();
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

py::array_t<double> LbObservations(const LbSim& sim) {
  py::array_t<double> a({static_cast<py::ssize_t>(sim.NumLbs()), static_cast<py::ssize_t>(sim.NumServers()),
                         static_cast<py::ssize_t>(kNumObservationFeatures)});
  sim.Observe(a.mutable_data());
  return a;
}

}  // namespace
}  // namespace dcgym::bindings

void BindLb(py::module_& m) {
  using dcgym::lb::LbSim;
  namespace b = dcgym::bindings;

  m.def(
      "check_lb_config", [](const py::dict& d) { b::ParseLbConfig(d); }, py::arg("config"),
      "Validate an lb config dict in the engine; raises ValueError naming the bad field.");

  m.def(
      "step_lb_batch",
      [](const std::vector<LbSim*>& sims, const std::vector<double>& time_us) {
        if (sims.size() != time_us.size())
          throw std::invalid_argument("time_us: needs one time per sim (" + std::to_string(sims.size()) + "), got " +
                                      std::to_string(time_us.size()));
        for (size_t i = 0; i < sims.size(); ++i) {  // every time checked before any sim runs
          if (sims[i] == nullptr) throw std::invalid_argument("sims[" + std::to_string(i) + "]: got None");
          if (!(time_us[i] >= sims[i]->Now()) || !std::isfinite(time_us[i]))
            throw std::invalid_argument("time_us[" + std::to_string(i) + "]: must be finite and >= sims[" +
                                        std::to_string(i) + "]'s current time " + std::to_string(sims[i]->Now()) +
                                        ", got " + std::to_string(time_us[i]));
        }
        py::gil_scoped_release release;
        for (size_t i = 0; i < sims.size(); ++i) sims[i]->RunUntil(time_us[i]);
      },
      py::arg("sims"), py::arg("time_us"),
      "Run each sim until its time (LbSim.run_until for all of them in one call). Releases the GIL.");

  py::class_<LbSim>(m, "LbSim",
                    "The multi-stage server model of the multi-LB paper (Yao et al., CIKM 2022, App. C.1): M load "
                    "balancers over N servers with blocked-PS CPU and PS IO queues.")
      .def(py::init([](const py::dict& d) { return std::make_unique<LbSim>(b::ParseLbConfig(d)); }), py::arg("config"))
      .def_property_readonly_static(
          "limits",
          [](py::object) {
            namespace lb = dcgym::lb;
            return py::dict("servers"_a = lb::kMaxServers, "workers"_a = lb::kMaxWorkers,
                            "mp_level"_a = lb::kMaxMpLevel, "stages"_a = lb::kMaxStages, "lbs"_a = lb::kMaxLbs,
                            "backlog"_a = lb::kMaxBacklog, "reservoir_size"_a = lb::kMaxReservoir,
                            "fd_density"_a = lb::kMaxFdDensity, "reservoir_samples"_a = lb::kMaxReservoirSamples,
                            "load"_a = dcgym::kernel::kMaxLoad);
          },
          "The largest value of each bounded config field (lb/lb_sim.hpp): the schema's bounds.")
      .def(
          "run_until",
          [](LbSim& s, double t) {
            py::gil_scoped_release release;
            s.RunUntil(t);
          },
          py::arg("time_us"), "Run until simulated time time_us. Releases the GIL.")
      .def(
          "run_flows",
          [](LbSim& s, int64_t n) {
            const auto flows = b::Count(n, "flows");
            py::gil_scoped_release release;
            s.RunFlows(flows);
          },
          py::arg("n"), "Run until n more flows have arrived. Releases the GIL.")
      .def(
          "run_completions",
          [](LbSim& s, int64_t n) {
            const auto flows = b::Count(n, "flows");
            py::gil_scoped_release release;
            s.RunCompletions(flows);
          },
          py::arg("n"),
          "Run until n more flows have ended (completed or rejected), the episode rule of the authors' "
          "simulator. Releases the GIL.")
      .def(
          "set_weights",
          [](LbSim& s, int64_t lb, py::array_t<double, py::array::c_style | py::array::forcecast> w) {
            if (w.ndim() != 1) throw std::invalid_argument("weights: must be a 1-D array with one weight per server");
            s.SetWeights(b::Count<uint32_t>(lb, "lb"), std::vector<double>(w.data(), w.data() + w.shape(0)));
          },
          py::arg("lb"), py::arg("weights"),
          "Set load balancer lb's weights over servers (policies wcmp, sed, weights); weights: non-negative, not "
          "all zero.")
      .def(
          "weights",
          [](const LbSim& s, int64_t lb) {
            const auto& w = s.Weights(b::Count<uint32_t>(lb, "lb"));
            return py::array_t<double>(static_cast<py::ssize_t>(w.size()), w.data());
          },
          py::arg("lb"), "Load balancer lb's current weights.")
      .def("observations", &b::LbObservations,
           "Each LB's view of each server over the current decision period: float64 array of shape "
           "(num_lbs, num_servers, k), features named by observation_features (times in us).")
      .def_property_readonly_static("observation_features",
                                    [](py::object) { return b::NameList(dcgym::lb::kObservationFeatures); })
      .def_property_readonly("now_us", &LbSim::Now)
      .def_property_readonly("num_servers", &LbSim::NumServers)
      .def_property_readonly("num_lbs", &LbSim::NumLbs)
      .def_property_readonly("arrival_rate_per_us", &LbSim::ArrivalRate)
      .def("results", &b::LbResults,
           "Counters, FCT statistics (fct_us: every flow, rejected ones with the timeout; fct_served_us: served "
           "flows only) and per-server state as a dict.")
      .def(
          "records",
          [](const LbSim& s) {
            const auto& r = s.Records();
            const auto arr = [](const std::vector<double>& v) { return py::array_t<double>(v.size(), v.data()); };
            return py::dict("arrival_us"_a = arr(r.arrival_us), "cpu_us"_a = arr(r.cpu_us), "io_us"_a = arr(r.io_us));
          },
          "With record_flows, per measured flow in arrival order: arrival_us, cpu_us (work at speed 1), io_us.")
      .def(
          "fct_histogram",
          [](const LbSim& s, bool served) { return b::HistogramArrays(served ? s.FctServed() : s.Fct()); },
          py::arg("served") = false,
          "(lower bucket edges in us, counts) of the measured flows' completion times: every flow, a rejected "
          "one at the timeout (served=False), or the served flows only (served=True).");
}
