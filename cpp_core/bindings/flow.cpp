// Binding of the flow model (flow/flow_sim.hpp): parses the config dict into
// a FlowConfig, binds FlowSim with preallocated observation buffers that
// Python reads as numpy views, and the batch stepper. No model logic here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "convert.hpp"
#include "dcgym/flow/auto_agents.hpp"
#include "dcgym/flow/flow_sim.hpp"
#include "dcgym/flow/policy_run.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/runtime/policy_file.hpp"

namespace py = pybind11;
using namespace pybind11::literals;  // "name"_a, for the limits

namespace dcgym::bindings {
namespace {

namespace fl = dcgym::flow;

// "web_search", "data_mining" or {"cdf": [[bytes, probability], ...]}.
fl::SizeConfig ParseSizes(py::handle v, const std::string& field) {
  fl::SizeConfig s;
  if (py::isinstance<py::str>(v)) {
    s.name = v.cast<std::string>();
    return s;
  }
  if (!py::isinstance<py::dict>(v))
    throw std::invalid_argument(field +
                                ": must be a workload name (web_search, data_mining) or {cdf: [[bytes, p], ...]}");
  const auto d = v.cast<py::dict>();
  OnlyKeys(d, field, {"cdf"});
  s.name = "cdf";
  s.cdf = Get<std::vector<std::pair<double, double>>>(d, "cdf", field);
  return s;
}

fl::TopologyConfig ParseTopology(const py::dict& d) {
  const std::string f = "topology";
  fl::TopologyKind kind = fl::TopologyKind::kBigSwitch;
  if (Has(d, "kind"))
    kind = Choice<fl::TopologyKind>(Get<std::string>(d, "kind", f), "topology.kind",
                                    {{"single_link", fl::TopologyKind::kSingleLink},
                                     {"big_switch", fl::TopologyKind::kBigSwitch},
                                     {"planes", fl::TopologyKind::kPlanes},
                                     {"leaf_spine", fl::TopologyKind::kLeafSpine}});
  fl::TopologyConfig t = fl::TopologyConfig::Of(kind);
  t.link_gbps = Get<double>(d, "link_gbps", f, t.link_gbps);
  switch (t.kind) {
    case fl::TopologyKind::kSingleLink:
      OnlyKeys(d, f, {"kind", "link_gbps", "senders"});
      t.hosts = Get<uint32_t>(d, "senders", f, t.hosts);
      break;
    case fl::TopologyKind::kBigSwitch:
      OnlyKeys(d, f, {"kind", "link_gbps", "hosts"});
      t.hosts = Get<uint32_t>(d, "hosts", f, t.hosts);
      break;
    case fl::TopologyKind::kPlanes:
      OnlyKeys(d, f, {"kind", "link_gbps", "hosts", "planes"});
      t.hosts = Get<uint32_t>(d, "hosts", f, t.hosts);
      t.planes = Get<uint32_t>(d, "planes", f, t.planes);
      break;
    case fl::TopologyKind::kLeafSpine:
      OnlyKeys(d, f, {"kind", "link_gbps", "racks", "hosts_per_rack", "spines", "oversubscription"});
      t.racks = Get<uint32_t>(d, "racks", f, t.racks);
      t.hosts_per_rack = Get<uint32_t>(d, "hosts_per_rack", f, t.hosts_per_rack);
      t.spines = Get<uint32_t>(d, "spines", f, t.spines);
      t.oversubscription = Get<double>(d, "oversubscription", f, t.oversubscription);
      break;
  }
  return t;
}

// Thresholds in bytes, or in packets (converted by the model's unit, fl::PacketsToBytes).
std::vector<double> ParseThresholds(const py::dict& d, const std::string& f) {
  const bool bytes = Has(d, "thresholds_bytes"), packets = Has(d, "thresholds_packets");
  if (bytes && packets) throw std::invalid_argument(f + ": give thresholds_bytes or thresholds_packets, not both");
  if (bytes) return Get<std::vector<double>>(d, "thresholds_bytes", f);
  if (packets) return fl::PacketsToBytes(Get<std::vector<double>>(d, "thresholds_packets", f));
  return {};
}

fl::FlowConfig ParseFlowConfig(const py::dict& d) {
  OnlyKeys(d, "",
           {"topology", "scheduling", "workload", "base_rtt_us", "seed", "warmup_flows", "measure_flows",
            "long_flow_bytes", "observation", "solver", "record_flows"});
  fl::FlowConfig c;
  c.topology = ParseTopology(GetDictOrEmpty(d, "topology", ""));

  const auto s = GetDictOrEmpty(d, "scheduling", "");
  OnlyKeys(s, "scheduling", {"discipline", "levels", "thresholds_bytes", "thresholds_packets"});
  if (Has(s, "discipline"))
    c.discipline = Choice<fl::Discipline>(Get<std::string>(s, "discipline", "scheduling"), "scheduling.discipline",
                                          {{"fair", fl::Discipline::kFair},
                                           {"qsjf", fl::Discipline::kQsjf},
                                           {"qlas", fl::Discipline::kMlfq},
                                           {"pias", fl::Discipline::kMlfq},
                                           {"mlfq", fl::Discipline::kMlfq},
                                           {"las", fl::Discipline::kLas},
                                           {"srpt", fl::Discipline::kSrpt}});
  c.levels = Get<uint32_t>(s, "levels", "scheduling", fl::FlowConfig::DefaultLevels(c.discipline));
  c.thresholds = ParseThresholds(s, "scheduling");

  const auto w = GetDictOrEmpty(d, "workload", "");
  OnlyKeys(w, "workload", {"sizes", "load", "groups", "traffic_matrix", "dynamics", "trace"});
  if (Has(w, "groups")) {
    if (w.contains("sizes") || w.contains("load"))
      throw std::invalid_argument("workload: give sizes and load per group, or at the top without groups");
    c.groups.clear();
    ForEachItem(w, "groups", "workload", [&](const py::dict& g, const std::string& f) {
      OnlyKeys(g, f, {"hosts", "sizes", "load"});
      fl::GroupConfig gc;
      gc.hosts = Get<uint32_t>(g, "hosts", f, gc.hosts);
      gc.sizes = ParseSizes(Required(g, "sizes", f), Path(f, "sizes"));
      gc.load = Get<double>(g, "load", f);
      c.groups.push_back(gc);
    });
  } else {
    if (Has(w, "sizes")) c.groups[0].sizes = ParseSizes(w["sizes"], "workload.sizes");
    c.groups[0].load = Get<double>(w, "load", "workload", c.groups[0].load);
    c.implicit_group = true;
  }
  c.traffic_matrix = Get<std::vector<std::vector<double>>>(w, "traffic_matrix", "workload", c.traffic_matrix);
  ForEachItem(w, "dynamics", "workload", [&](const py::dict& e, const std::string& f) {
    OnlyKeys(e, f, {"time_s", "group", "load", "sizes"});
    fl::ChangeConfig ch;
    ch.time_s = Get<double>(e, "time_s", f);
    ch.group = Get<int32_t>(e, "group", f, ch.group);
    if (Has(e, "load")) ch.load = Get<double>(e, "load", f);
    if (Has(e, "sizes")) {
      ch.change_sizes = true;
      ch.sizes = ParseSizes(e["sizes"], Path(f, "sizes"));
    }
    c.dynamics.push_back(ch);
  });
  ForEachItem(w, "trace", "workload", [&](const py::dict& e, const std::string& f) {
    OnlyKeys(e, f, {"time_s", "src", "dst", "size_bytes", "path", "priority", "cap_gbps"});
    fl::TraceFlow t;
    t.time_s = Get<double>(e, "time_s", f);
    t.src = Get<uint32_t>(e, "src", f);
    t.dst = Get<uint32_t>(e, "dst", f, t.dst);
    t.size_bytes = Get<double>(e, "size_bytes", f);
    t.path = Get<int32_t>(e, "path", f, t.path);
    t.priority = Get<int32_t>(e, "priority", f, t.priority);
    t.cap_gbps = Get<double>(e, "cap_gbps", f, t.cap_gbps);
    c.trace.push_back(t);
  });

  c.base_rtt_us = Get<double>(d, "base_rtt_us", "", c.base_rtt_us);
  c.seed = Get<uint64_t>(d, "seed", "", c.seed);
  c.warmup_flows = Get<uint64_t>(d, "warmup_flows", "", c.warmup_flows);
  c.measure_flows = Get<uint64_t>(d, "measure_flows", "", c.measure_flows);
  c.long_flow_bytes = Get<double>(d, "long_flow_bytes", "", c.long_flow_bytes);
  const auto o = GetDictOrEmpty(d, "observation", "");
  OnlyKeys(o, "observation", {"short_finished", "long_active", "long_finished"});
  c.observation.short_finished = Get<uint32_t>(o, "short_finished", "observation", c.observation.short_finished);
  c.observation.long_active = Get<uint32_t>(o, "long_active", "observation", c.observation.long_active);
  c.observation.long_finished = Get<uint32_t>(o, "long_finished", "observation", c.observation.long_finished);
  if (Has(d, "solver"))
    c.incremental = Choice<bool>(Get<std::string>(d, "solver", ""), "solver", {{"incremental", true}, {"full", false}});
  c.record_flows = Get<bool>(d, "record_flows", "", c.record_flows);
  c.Validate();
  return c;
}

// FlowSim and the buffers its observations are written into.
struct PyFlowSim {
  explicit PyFlowSim(const fl::FlowConfig& c)
      : sim(c),
        short_finished(size_t{c.observation.short_finished} * fl::kFinishedFeatures),
        long_active(size_t{c.observation.long_active} * fl::kActiveFeatures),
        long_ids(c.observation.long_active),
        long_finished(size_t{c.observation.long_finished} * fl::kFinishedFeatures) {}
  fl::FlowSim sim;
  std::vector<double> short_finished, long_active;
  std::vector<int64_t> long_ids;
  std::vector<double> long_finished;
};

template <typename T>
py::array_t<T> View(std::vector<T>& v, py::ssize_t rows, py::ssize_t cols, py::handle owner) {
  if (cols == 0) return py::array_t<T>({rows}, {static_cast<py::ssize_t>(sizeof(T))}, v.data(), owner);
  return py::array_t<T>({rows, cols}, {static_cast<py::ssize_t>(sizeof(T)) * cols, static_cast<py::ssize_t>(sizeof(T))},
                        v.data(), owner);
}

py::dict Results(const fl::FlowSim& s) {
  const auto& c = s.Count();
  const auto& h = s.Histograms();
  const double rtt = s.BaseRttS();
  py::dict fct, fluid, slowdown;
  for (uint32_t b = 0; b < fl::kNumBuckets; ++b) {
    const auto bucket = static_cast<fl::Bucket>(b);
    const kernel::LogHistogram f = h.Fct(bucket);
    fct[fl::kBucketNames[b]] = Summary(f, [rtt](double us) { return fl::FctSeconds(us, rtt); });
    fluid[fl::kBucketNames[b]] = Summary(f, [](double us) { return fl::FctSeconds(us, 0.0); });
    slowdown[fl::kBucketNames[b]] = Summary(h.Slowdown(bucket));
  }
  py::dict r;
  r["flows_arrived"] = c.arrived;
  r["flows_completed"] = c.completed;
  r["flows_active"] = s.NumActive();
  r["flows_measured"] = c.measured;
  r["flows_measured_pending"] = s.MeasuredPending();
  r["long_flows_active"] = s.NumLongActive();
  r["events"] = c.events;
  r["sim_time_s"] = s.Now();
  r["bytes_arrived"] = c.bytes_arrived;
  r["bytes_completed"] = c.bytes_completed;
  r["fct_s"] = fct;
  r["fct_fluid_s"] = fluid;
  r["slowdown"] = slowdown;
  const double t = s.MeasuredTime();
  r["measured_time_s"] = t;
  r["throughput_gbps"] = t > 0 ? fl::Gbps(c.measured_bytes / t) : 0.0;
  r["mean_unfinished_bytes"] = s.MeanUnfinished();
  r["mean_active_flows"] = s.MeanActive();
  r["unfinished_bytes"] = s.Unfinished();
  r["arrival_rate_per_s"] = s.Workload().ArrivalRate();
  r["long_flow_bytes"] = s.LongFlowBytes();
  std::vector<double> util(s.Topo().NumLinks());
  s.MeasuredLinkUtilization(util.data());
  const uint32_t ports = s.Topo().NumHostPorts();
  double busiest = 0, port_sum = 0;
  for (uint32_t l = 0; l < util.size(); ++l) {
    busiest = std::max(busiest, util[l]);
    if (l < ports) port_sum += util[l];
  }
  r["busiest_link_utilization"] = busiest;
  r["mean_port_utilization"] = ports ? port_sum / ports : 0.0;
  return r;
}

py::dict IntervalDict(const fl::FlowSim& s) {
  const auto& i = s.Interval();
  const auto mean = [](double sum, uint64_t n) { return n ? sum / static_cast<double>(n) : std::nan(""); };
  py::dict d;
  d["start_s"] = i.start_s;
  d["duration_s"] = s.Now() - i.start_s;
  d["arrived"] = i.arrived;
  d["finished"] = i.finished;
  d["short_finished"] = i.short_finished;
  d["long_finished"] = i.long_finished;
  d["mean_fct_s"] = mean(i.fct_sum_s, i.finished);
  d["mean_short_fct_s"] = mean(i.short_fct_sum_s, i.short_finished);
  d["mean_long_fct_s"] = mean(i.long_fct_sum_s, i.long_finished);
  d["mean_throughput_gbps"] = mean(fl::Gbps(i.throughput_sum_bps), i.finished);
  d["mean_long_throughput_gbps"] = mean(fl::Gbps(i.long_throughput_sum_bps), i.long_finished);
  d["bytes_finished"] = i.bytes_finished;
  return d;
}

py::dict Records(const fl::FlowSim& s) {
  const auto& r = s.Records();
  const py::ssize_t n = static_cast<py::ssize_t>(r.size());
  py::array_t<int64_t> index(n), src(n), dst(n), path(n), level(n);
  py::array_t<double> size(n), arrival(n), fct(n);
  for (py::ssize_t k = 0; k < n; ++k) {
    index.mutable_at(k) = static_cast<int64_t>(r[k].index);
    src.mutable_at(k) = r[k].src;
    dst.mutable_at(k) = r[k].dst;
    path.mutable_at(k) = r[k].path;
    level.mutable_at(k) = r[k].level;
    size.mutable_at(k) = r[k].size;
    arrival.mutable_at(k) = r[k].arrival;
    fct.mutable_at(k) = r[k].fct;
  }
  py::dict d;
  d["index"] = index;
  d["src"] = src;
  d["dst"] = dst;
  d["path"] = path;
  d["level"] = level;
  d["size_bytes"] = size;
  d["arrival_s"] = arrival;
  d["fct_s"] = fct;
  return d;
}

py::dict ActiveTable(const fl::FlowSim& s) {
  std::vector<fl::ActiveFlow> a;
  s.ListActive(a);
  const py::ssize_t n = static_cast<py::ssize_t>(a.size());
  py::array_t<int64_t> handle(n), index(n), src(n), dst(n), path(n), level(n);
  py::array_t<double> size(n), sent(n), rate(n), arrival(n);
  py::array_t<bool> pinned(n), is_long(n);
  for (py::ssize_t k = 0; k < n; ++k) {
    handle.mutable_at(k) = static_cast<int64_t>(a[k].handle);
    index.mutable_at(k) = static_cast<int64_t>(a[k].index);
    src.mutable_at(k) = a[k].src;
    dst.mutable_at(k) = a[k].dst;
    path.mutable_at(k) = a[k].path;
    level.mutable_at(k) = a[k].level;
    size.mutable_at(k) = a[k].size;
    sent.mutable_at(k) = a[k].sent;
    rate.mutable_at(k) = fl::Gbps(a[k].rate);
    arrival.mutable_at(k) = a[k].arrival;
    pinned.mutable_at(k) = a[k].pinned;
    is_long.mutable_at(k) = a[k].is_long;
  }
  py::dict d;
  d["handle"] = handle;
  d["index"] = index;
  d["src"] = src;
  d["dst"] = dst;
  d["path"] = path;
  d["level"] = level;
  d["size_bytes"] = size;
  d["sent_bytes"] = sent;
  d["rate_gbps"] = rate;
  d["arrival_s"] = arrival;
  d["pinned"] = pinned;
  d["long"] = is_long;
  return d;
}

}  // namespace
}  // namespace dcgym::bindings

void BindFlow(py::module_& m) {
  namespace b = dcgym::bindings;
  namespace fl = dcgym::flow;
  using b::PyFlowSim;

  m.def(
      "check_flow_config", [](const py::dict& d) { b::ParseFlowConfig(d); }, py::arg("config"),
      "Validate a flow config dict in the engine; raises ValueError naming the bad field.");
  m.def(
      "flow_workloads",
      [] {
        py::dict d;
        for (const auto& name : fl::NamedCdfs()) d[py::str(name)] = fl::NamedCdf(name, "workload");
        return d;
      },
      "The built-in flow-size CDFs: name -> [(bytes, cumulative probability), ...].");

  py::class_<PyFlowSim>(m, "FlowSim",
                        "Fluid flow-level datacenter network (PIAS / AuTO): strict priority levels, max-min "
                        "sharing within a level, MLFQ on bytes sent, per-flow priority, rate cap and path. Bytes "
                        "and seconds; see docs/flow.md for the config schema.")
      .def(py::init([](const py::dict& d) { return std::make_unique<PyFlowSim>(b::ParseFlowConfig(d)); }),
           py::arg("config"))
      .def_property_readonly_static(
          "limits",
          [](py::object) {
            return py::dict("hosts"_a = fl::kMaxHosts, "links"_a = fl::kMaxLinks, "planes"_a = fl::kMaxPlanes,
                            "spines"_a = fl::kMaxSpines, "levels"_a = fl::kMaxLevels,
                            "observation_rows"_a = fl::kMaxObservation, "host_load"_a = fl::kMaxHostLoad,
                            "link_gbps"_a = fl::kMaxLinkGbps, "oversubscription"_a = fl::kMaxOversubscription,
                            "base_rtt_us"_a = fl::kMaxBaseRttUs);
          },
          "The largest value of each bounded config field (flow/config.hpp): the schema's bounds.")
      .def_property_readonly_static(
          "packet_bytes", [](py::object) { return fl::kPacketBytes; },
          "Bytes per packet of thresholds given in packets (PIAS's 1460-byte segments).")
      .def_static(
          "topology_links", [](const py::dict& d) { return fl::NumLinks(b::ParseTopology(d)); }, py::arg("topology"),
          "The links a topology mapping (the config's `topology`) has; the config allows limits['links'].")
      .def(
          "run_until",
          [](PyFlowSim& s, double t) {
            py::gil_scoped_release release;
            s.sim.RunUntil(t);
          },
          py::arg("time_s"), "Process every event up to simulated time time_s. Releases the GIL.")
      .def(
          "run_for",
          [](PyFlowSim& s, double dt) {
            py::gil_scoped_release release;
            s.sim.RunFor(dt);
          },
          py::arg("seconds"), "Advance simulated time by `seconds`. Releases the GIL.")
      .def(
          "run_flows",
          [](PyFlowSim& s, int64_t n) {
            const auto flows = b::Count(n, "n");
            py::gil_scoped_release release;
            s.sim.RunFlows(flows);
          },
          py::arg("n"), "Run until n more flows have arrived. Releases the GIL.")
      .def(
          "start_interval", [](PyFlowSim& s) { s.sim.StartInterval(); },
          "Start a decision interval: interval aggregates, finished-flow observations and link utilisation "
          "count from now.")
      .def(
          "step_interval",
          [](PyFlowSim& s, double dt) {
            py::gil_scoped_release release;
            s.sim.StepInterval(dt);
          },
          py::arg("seconds"), "start_interval(), then run_for(seconds). Releases the GIL.")
      .def(
          "set_thresholds", [](PyFlowSim& s, const std::vector<double>& bytes) { s.sim.SetThresholds(bytes); },
          py::arg("bytes"), "sRLA action: the levels - 1 MLFQ (or QSJF) thresholds in bytes, non-decreasing.")
      .def_property_readonly("thresholds", [](const PyFlowSim& s) { return s.sim.Thresholds(); })
      .def(
          "set_flow_actions",
          [](PyFlowSim& s, py::array_t<int64_t, py::array::c_style | py::array::forcecast> flows,
             py::array_t<int64_t, py::array::c_style | py::array::forcecast> levels,
             py::array_t<double, py::array::c_style | py::array::forcecast> caps_gbps,
             py::array_t<int64_t, py::array::c_style | py::array::forcecast> paths) {
            const py::ssize_t n = flows.size();
            if (flows.ndim() != 1 || levels.size() != n || caps_gbps.size() != n || paths.size() != n)
              throw std::invalid_argument("actions: flows, levels, caps_gbps and paths must be 1-D of one length");
            std::vector<fl::FlowAction> actions(static_cast<size_t>(n));
            for (py::ssize_t i = 0; i < n; ++i) {
              if (flows.data()[i] < 0)
                throw std::invalid_argument("actions[" + std::to_string(i) + "].flow: not a flow handle (padding?)");
              actions[i].flow = static_cast<uint64_t>(flows.data()[i]);
              actions[i].level = static_cast<int32_t>(std::clamp<int64_t>(levels.data()[i], -2, 1 << 20));
              actions[i].cap_gbps = caps_gbps.data()[i];
              actions[i].path = static_cast<int32_t>(std::clamp<int64_t>(paths.data()[i], -2, 1 << 20));
            }
            s.sim.SetFlowActions(actions);
          },
          py::arg("flows"), py::arg("levels"), py::arg("caps_gbps"), py::arg("paths"),
          "lRLA actions, one per flow handle: level (-1 keeps; setting one pins the flow), rate cap in Gbps (< 0 "
          "keeps, inf removes), path (-1 keeps). All are checked before any is applied.")
      .def(
          "balance_paths",
          [](PyFlowSim& s, double long_bytes, int64_t max_flows, int64_t level) {
            const auto n = b::Count(max_flows, "max_flows");
            if (level < -1 || level > (1 << 20))
              throw std::invalid_argument("level: must be a level or -1 (keep), got " + std::to_string(level));
            py::gil_scoped_release release;
            return s.sim.BalancePaths(long_bytes, n, static_cast<int32_t>(level));
          },
          py::arg("long_bytes"), py::arg("max_flows") = 0, py::arg("level") = -1,
          "The pathbal rule: every active flow that has sent long_bytes, oldest first (at most max_flows; 0: all), "
          "to the path whose links carry the fewest unfinished bytes of the other flows; level >= 0 also pins it "
          "there. Returns the number of flows moved.")
      .def(
          "observe",
          [](py::object self) {
            PyFlowSim& s = self.cast<PyFlowSim&>();
            s.sim.ObserveShortFinished(s.short_finished.data());
            s.sim.ObserveLongActive(s.long_active.data(), s.long_ids.data());
            s.sim.ObserveLongFinished(s.long_finished.data());
            const auto& o = s.sim.Config().observation;
            py::dict d;
            d["short_finished"] = b::View(s.short_finished, o.short_finished, fl::kFinishedFeatures, self);
            d["long_active"] = b::View(s.long_active, o.long_active, fl::kActiveFeatures, self);
            d["long_active_flows"] = b::View(s.long_ids, o.long_active, 0, self);
            d["long_finished"] = b::View(s.long_finished, o.long_finished, fl::kFinishedFeatures, self);
            return d;
          },
          "Refresh the observation buffers and return numpy views of them (no copies; the next observe() "
          "overwrites them): short_finished (m_s x 7), long_active (n_l x 6), long_active_flows (n_l handles, -1 "
          "padding), long_finished (m_l x 7). Features in finished_features / active_features.")
      .def(
          "interval", [](const PyFlowSim& s) { return b::IntervalDict(s.sim); },
          "Aggregates of the flows finished in the current interval (the rewards' inputs).")
      .def(
          "level_occupancy",
          [](const PyFlowSim& s) {
            const auto k = static_cast<py::ssize_t>(s.sim.Config().levels);
            py::array_t<double> flows(k), bytes(k);
            s.sim.LevelOccupancy(flows.mutable_data(), bytes.mutable_data());
            return py::make_tuple(flows, bytes);
          },
          "(active flows, unfinished bytes) per priority level.")
      .def(
          "link_utilization",
          [](const PyFlowSim& s) {
            const auto n = static_cast<py::ssize_t>(s.sim.Topo().NumLinks());
            py::array_t<double> interval(n), now(n);
            s.sim.LinkUtilization(interval.mutable_data(), now.mutable_data());
            return py::make_tuple(interval, now);
          },
          "(utilisation over the interval so far, utilisation now) per link.")
      .def_property_readonly("link_names",
                             [](const PyFlowSim& s) {
                               py::list l;
                               for (uint32_t i = 0; i < s.sim.Topo().NumLinks(); ++i)
                                 l.append(s.sim.Topo().LinkName(i));
                               return l;
                             })
      .def(
          "active_flows_table", [](const PyFlowSim& s) { return b::ActiveTable(s.sim); },
          "Every active flow as numpy arrays (handle, index, src, dst, path, level, size_bytes, sent_bytes, "
          "rate_gbps, arrival_s, pinned, long), in slot order.")
      .def_property_readonly(
          "slots", [](const PyFlowSim& s) { return s.sim.Slots(); },
          "Flow records allocated: the most flows in flight at once so far.")
      .def(
          "results", [](const PyFlowSim& s) { return b::Results(s.sim); },
          "Counters, FCT (with and without the base RTT) and slowdown summaries overall and per size bucket, "
          "time averages since the warm-up.")
      .def(
          "histogram",
          [](const PyFlowSim& s, const std::string& what, const std::string& bucket) {
            const auto b = static_cast<fl::Bucket>(dcgym::kernel::IndexOfName(fl::kBucketNames, bucket, "bucket"));
            if (what == "fct_fluid_us") return b::HistogramArrays(s.sim.Histograms().Fct(b));
            if (what == "slowdown") return b::HistogramArrays(s.sim.Histograms().Slowdown(b));
            throw std::invalid_argument("what: one of fct_fluid_us, slowdown, got '" + what + "'");
          },
          py::arg("what") = "fct_fluid_us", py::arg("bucket") = "all",
          "(lower bucket edges, counts) of the measured flows' fluid FCTs in microseconds (base RTT not "
          "included) or slowdowns, overall or in one size bucket.")
      .def(
          "records", [](const PyFlowSim& s) { return b::Records(s.sim); },
          "Every completed flow as numpy arrays (config record_flows only).")
      .def_property_readonly("now_s", [](const PyFlowSim& s) { return s.sim.Now(); })
      .def_property_readonly("num_hosts", [](const PyFlowSim& s) { return s.sim.Topo().NumHosts(); })
      .def_property_readonly("num_links", [](const PyFlowSim& s) { return s.sim.Topo().NumLinks(); })
      .def_property_readonly("num_levels", [](const PyFlowSim& s) { return s.sim.Config().levels; })
      .def_property_readonly("num_paths", [](const PyFlowSim& s) { return s.sim.Topo().MaxPaths(); })
      .def_property_readonly("active_flows", [](const PyFlowSim& s) { return s.sim.NumActive(); })
      .def_property_readonly("long_flow_bytes", [](const PyFlowSim& s) { return s.sim.LongFlowBytes(); })
      .def_property_readonly_static("finished_features",
                                    [](py::object) { return b::NameList(fl::kFinishedFeatureNames); })
      .def_property_readonly_static("active_features", [](py::object) { return b::NameList(fl::kActiveFeatureNames); });

  // The simulations of a batch (None stays null: the engine's batch check names it).
  const auto raw = [](const std::vector<PyFlowSim*>& sims) {
    std::vector<fl::FlowSim*> out;
    for (PyFlowSim* s : sims) out.push_back(s ? &s->sim : nullptr);
    return out;
  };
  m.def(
      "step_flow_batch",
      [raw](const std::vector<PyFlowSim*>& sims, double seconds, int64_t threads) {
        const auto sims_ = raw(sims);
        const auto count = b::Count<uint32_t>(threads, "threads");
        py::gil_scoped_release release;
        fl::StepBatch(sims_, seconds, count);
      },
      py::arg("sims"), py::arg("seconds"), py::arg("threads") = 1,
      "step_interval(seconds) on every simulation in one call, the GIL released; each simulation runs on one "
      "thread, so results do not depend on `threads`.");

  using F32 = py::array_t<float, py::array::c_style>;
  using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
  using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  m.def(
      "flow_thresholds_from_action",
      [](F64 action, double lo_bytes, double hi_bytes) {
        if (action.ndim() != 1) throw std::invalid_argument("action: must be 1-D (levels - 1 numbers in [-1, 1])");
        py::array_t<double> out(action.size());
        fl::ThresholdsFromAction(action.data(), static_cast<uint32_t>(action.size()), lo_bytes, hi_bytes,
                                 out.mutable_data());
        return out;
      },
      py::arg("action"), py::arg("lo_bytes"), py::arg("hi_bytes"),
      "sRLA's map (flow/auto_agents.hpp): K - 1 numbers in [-1, 1] (clipped) to K - 1 non-decreasing thresholds in "
      "bytes in [lo_bytes, hi_bytes], cumulative in log bytes.");

  py::class_<fl::AutoAgents>(m, "AutoAgents",
                             "AuTO's two agents on a FlowSim (flow/auto_agents.hpp): scaled observations, the "
                             "maps of sRLA's thresholds and lRLA's per-flow choices, and the ratio rewards.")
      .def(py::init([](const PyFlowSim& s, double lo, double hi, std::vector<double> caps, double srla_cap,
                       double lrla_cap, bool path_loads, bool keep_level, bool path_loads_last, bool move_check) {
             fl::AutoSpec spec;
             spec.path_loads = path_loads;
             spec.path_loads_last = path_loads_last;
             spec.keep_level = keep_level;
             spec.move_check = move_check;
             spec.threshold_lo_bytes = lo;
             spec.threshold_hi_bytes = hi;
             spec.cap_fractions = std::move(caps);
             spec.srla_reward_cap = srla_cap;
             spec.lrla_reward_cap = lrla_cap;
             return std::make_unique<fl::AutoAgents>(s.sim, spec);
           }),
           py::arg("sim"), py::arg("threshold_lo_bytes"), py::arg("threshold_hi_bytes"), py::arg("cap_fractions"),
           py::arg("srla_reward_cap"), py::arg("lrla_reward_cap"), py::arg("path_loads") = false,
           py::arg("keep_level") = false, py::arg("path_loads_last") = false, py::arg("move_check") = false)
      .def_property_readonly("srla_actions", &fl::AutoAgents::SrlaActions)
      .def_property_readonly("srla_observations", &fl::AutoAgents::SrlaObservations)
      .def_property_readonly("lrla_flows", &fl::AutoAgents::LrlaFlows)
      .def_property_readonly("lrla_observations", &fl::AutoAgents::LrlaObservations)
      .def_property_readonly("lrla_row_width", &fl::AutoAgents::LrlaRowWidth,
                             "Features of an active long flow's row: 6, plus one per path with path_loads and with "
                             "path_loads_last.")
      .def_property_readonly("levels", &fl::AutoAgents::Levels)
      .def_property_readonly("level_choices", &fl::AutoAgents::LevelChoices,
                             "Choices of a long flow's level index: levels, one more with keep_level (leave it).")
      .def_property_readonly("caps", &fl::AutoAgents::Caps)
      .def_property_readonly("paths", &fl::AutoAgents::Paths)
      .def_property_readonly(
          "flows",
          [](const fl::AutoAgents& a) {
            const auto& f = a.Flows();
            py::array_t<int64_t> out(static_cast<py::ssize_t>(f.size()));
            std::copy(f.begin(), f.end(), out.mutable_data());
            return out;
          },
          "Handles of the long flows the last observation listed (-1: none): the targets of lRLA's next action.")
      .def("reset", &fl::AutoAgents::Reset, "Forget the last means (a new episode) and the listed flows.")
      .def(
          "check_lrla",
          [](const fl::AutoAgents& a, I64 choices) {
            b::Shaped(choices, {a.LrlaFlows(), fl::kLrlaChoices}, "lrla");
            a.CheckLrla(choices.data());
          },
          py::arg("choices"), "Raise ValueError naming the first index out of range.")
      .def(
          "observe",
          [](fl::AutoAgents& a, const PyFlowSim& s, F32 srla_obs, F32 lrla_obs) {
            float* so = b::Shaped(srla_obs, {a.SrlaObservations()}, "srla_obs");
            float* lo = b::Shaped(lrla_obs, {a.LrlaObservations()}, "lrla_obs");
            a.Observe(s.sim, so, lo);
          },
          py::arg("sim"), py::arg("srla_obs"), py::arg("lrla_obs"),
          "Write both scaled observations (float32) and remember the long flows listed.")
      .def(
          "step",
          [](fl::AutoAgents& a, PyFlowSim& s, std::optional<F64> srla, std::optional<I64> lrla, double seconds,
             F32 srla_obs, F32 lrla_obs, py::array_t<double, py::array::c_style> rewards) {
            const double* sa = nullptr;
            const int64_t* la = nullptr;
            if (srla) sa = b::Shaped(*srla, {a.SrlaActions()}, "srla");
            if (lrla) la = b::Shaped(*lrla, {a.LrlaFlows(), fl::kLrlaChoices}, "lrla");
            float* so = b::Shaped(srla_obs, {a.SrlaObservations()}, "srla_obs");
            float* lo = b::Shaped(lrla_obs, {a.LrlaObservations()}, "lrla_obs");
            double* r = b::Shaped(rewards, {2}, "rewards");
            py::gil_scoped_release release;
            a.Step(s.sim, sa, la, seconds, so, lo, r);
          },
          py::arg("sim"), py::arg("srla"), py::arg("lrla"), py::arg("seconds"), py::arg("srla_obs"),
          py::arg("lrla_obs"), py::arg("rewards"),
          "Apply the actions (None: that agent does not act), run one interval, write the observations and the "
          "rewards (sRLA, lRLA). Releases the GIL.");

  m.def(
      "run_auto_policies",
      [](PyFlowSim& s, fl::AutoAgents& a, std::optional<std::string> srla, std::optional<std::string> lrla,
         double interval_s, uint64_t flows, double drain_factor) {
        dcgym::runtime::Policy srla_policy, lrla_policy;
        auto* sp = srla ? fl::LoadAutoPolicy(*srla, "srla", &srla_policy) : nullptr;
        auto* lp = lrla ? fl::LoadAutoPolicy(*lrla, "lrla", &lrla_policy) : nullptr;
        py::gil_scoped_release release;
        return fl::RunAutoPolicies(s.sim, a, sp, lp, interval_s, flows, drain_factor);
      },
      py::arg("sim"), py::arg("agents"), py::arg("srla"), py::arg("lrla"), py::arg("interval_s"), py::arg("flows"),
      py::arg("drain_factor"),
      "A whole evaluation run with AuTO's agents deciding from policy files (paths; None: that agent holds) every "
      "interval inside the engine: to `flows` arrivals, then until the measured flows complete or drain_factor x "
      "the arrivals' time passes. Returns the number of intervals. Releases the GIL.");

  m.def(
      "step_auto_batch",
      [raw](const std::vector<PyFlowSim*>& sims, const std::vector<fl::AutoAgents*>& agents, std::optional<F64> srla,
            std::optional<I64> lrla, double seconds, F32 srla_obs, F32 lrla_obs,
            py::array_t<double, py::array::c_style> rewards, int64_t threads) {
        const auto sims_ = raw(sims);
        const auto count = b::Count<uint32_t>(threads, "threads");
        fl::CheckAutoBatch(sims_, agents, count);  // before agents[0] gives the arrays' shapes
        const auto n = static_cast<py::ssize_t>(sims.size());
        const fl::AutoAgents& a0 = *agents[0];
        const double* sa = nullptr;
        const int64_t* la = nullptr;
        if (srla) sa = b::Shaped(*srla, {n, a0.SrlaActions()}, "srla");
        if (lrla) la = b::Shaped(*lrla, {n, a0.LrlaFlows(), fl::kLrlaChoices}, "lrla");
        float* so = b::Shaped(srla_obs, {n, a0.SrlaObservations()}, "srla_obs");
        float* lo = b::Shaped(lrla_obs, {n, a0.LrlaObservations()}, "lrla_obs");
        double* r = b::Shaped(rewards, {n, 2}, "rewards");
        py::gil_scoped_release release;
        fl::StepAutoBatch(sims_, agents, sa, la, seconds, so, lo, r, count);
      },
      py::arg("sims"), py::arg("agents"), py::arg("srla"), py::arg("lrla"), py::arg("seconds"), py::arg("srla_obs"),
      py::arg("lrla_obs"), py::arg("rewards"), py::arg("threads") = 1,
      "AutoAgents.step on every (simulation, agents) pair in one call, arrays stacked on a leading axis; the GIL "
      "released; results do not depend on `threads`.");

  m.def(
      "observe_flow_batch",
      [](const std::vector<PyFlowSim*>& sims, py::array_t<double, py::array::c_style> short_finished,
         py::array_t<double, py::array::c_style> long_active, py::array_t<int64_t, py::array::c_style> long_flows,
         py::array_t<double, py::array::c_style> long_finished) {
        if (sims.empty()) return;
        const auto& o = sims[0]->sim.Config().observation;
        const auto n = static_cast<py::ssize_t>(sims.size());
        for (size_t i = 0; i < sims.size(); ++i) {
          const auto& oi = sims[i]->sim.Config().observation;
          if (oi.short_finished != o.short_finished || oi.long_active != o.long_active ||
              oi.long_finished != o.long_finished)
            throw std::invalid_argument("sims[" + std::to_string(i) + "]: observation sizes differ from sims[0]");
        }
        double* sf = b::Shaped(short_finished, {n, o.short_finished, fl::kFinishedFeatures}, "short_finished");
        double* la = b::Shaped(long_active, {n, o.long_active, fl::kActiveFeatures}, "long_active");
        int64_t* ids = b::Shaped(long_flows, {n, o.long_active}, "long_flows");
        double* lf = b::Shaped(long_finished, {n, o.long_finished, fl::kFinishedFeatures}, "long_finished");
        py::gil_scoped_release release;
        for (size_t i = 0; i < sims.size(); ++i) {
          sims[i]->sim.ObserveShortFinished(sf + i * o.short_finished * fl::kFinishedFeatures);
          sims[i]->sim.ObserveLongActive(la + i * o.long_active * fl::kActiveFeatures, ids + i * o.long_active);
          sims[i]->sim.ObserveLongFinished(lf + i * o.long_finished * fl::kFinishedFeatures);
        }
      },
      py::arg("sims"), py::arg("short_finished"), py::arg("long_active"), py::arg("long_flows"),
      py::arg("long_finished"),
      "Write every simulation's observations into preallocated stacked arrays of shapes (n, m_s, 7), (n, n_l, "
      "6), (n, n_l) and (n, m_l, 7).");
}
