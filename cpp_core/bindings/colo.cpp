// Binding of the colo model (dcgym/colo/): one server's cores, LLC ways and
// memory bandwidth shared by latency-critical services. Parses the config
// dict (built from envs/colo/catalog.yaml) and binds; no model logic here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "convert.hpp"
#include "dcgym/colo/colo_sim.hpp"

namespace py = pybind11;

namespace dcgym::bindings {
namespace {

namespace colo = dcgym::colo;
using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::string Join(const std::string& parent, const char* key) { return parent.empty() ? key : parent + "." + key; }

// Refuses keys the schema does not know (a typo would otherwise be ignored).
void CheckKeys(const py::dict& d, const std::string& field, std::initializer_list<const char*> allowed) {
  for (auto item : d) {
    const std::string key = py::str(item.first);
    bool known = false;
    std::string list;
    for (const char* a : allowed) {
      known = known || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!known) throw std::invalid_argument(Join(field, key.c_str()) + ": unknown field; allowed: " + list);
  }
}

template <typename T>
T Read(const py::dict& d, const char* key, const std::string& parent) {
  if (!d.contains(key) || d[key].is_none()) throw std::invalid_argument(Join(parent, key) + ": missing");
  try {
    return d[key].cast<T>();
  } catch (const py::cast_error&) {
    throw std::invalid_argument(Join(parent, key) + ": wrong type, got " + std::string(py::str(py::repr(d[key]))));
  }
}

template <typename T>
T Read(const py::dict& d, const char* key, const std::string& parent, T fallback) {
  if (!d.contains(key) || d[key].is_none()) return fallback;
  return Read<T>(d, key, parent);
}

py::dict ReadDict(const py::dict& d, const char* key, const std::string& parent) {
  py::object v = d[key];
  if (!py::isinstance<py::dict>(v)) throw std::invalid_argument(Join(parent, key) + ": must be a mapping");
  return v.cast<py::dict>();
}

// A count read as a signed integer first, so -1 is reported rather than wrapped.
uint32_t ReadCount(const py::dict& d, const char* key, const std::string& parent, int64_t fallback = -1) {
  const int64_t v = fallback < 0 ? Read<int64_t>(d, key, parent) : Read<int64_t>(d, key, parent, fallback);
  if (v < 0 || v > (int64_t{1} << 31))
    throw std::invalid_argument(Join(parent, key) + ": must be a count >= 0, got " + std::to_string(v));
  return static_cast<uint32_t>(v);
}

colo::Platform ParsePlatform(const py::dict& d) {
  const std::string f = "platform";
  CheckKeys(d, f,
            {"name", "logical_cores", "physical_cores", "ways", "mb_per_way", "mem_bw_gbs", "freq_min_mhz",
             "freq_max_mhz", "mem_latency_ns", "smt_gain", "mba"});
  colo::Platform p;
  p.name = Read<std::string>(d, "name", f, std::string("custom"));
  p.logical_cores = ReadCount(d, "logical_cores", f);
  p.physical_cores = ReadCount(d, "physical_cores", f);
  p.ways = ReadCount(d, "ways", f);
  p.mb_per_way = Read<double>(d, "mb_per_way", f);
  p.mem_bw_gbs = Read<double>(d, "mem_bw_gbs", f);
  p.freq_min_mhz = Read<double>(d, "freq_min_mhz", f);
  p.freq_max_mhz = Read<double>(d, "freq_max_mhz", f);
  p.mem_latency_ns = Read<double>(d, "mem_latency_ns", f);
  p.smt_gain = Read<double>(d, "smt_gain", f);
  p.mba = Read<bool>(d, "mba", f);
  return p;
}

colo::ServiceConfig ParseService(const py::dict& d, const std::string& f) {
  CheckKeys(d, f,
            {"name",
             "qos_ms",
             "percentile",
             "service_ms",
             "cv2",
             "ipc",
             "ref_freq_mhz",
             "ref_cache_mb",
             "ref_mem_latency_ns",
             "mlp",
             "bytes_per_miss",
             "mrc",
             "io_ms",
             "smt_penalty",
             "ctx_overhead",
             "warmup_s",
             "warmup_slowdown",
             "virt_memory_gb",
             "res_memory_gb",
             "rps",
             "threads",
             "launch_s",
             "end_s",
             "changes",
             "cores",
             "ways"});
  colo::ServiceConfig sc;
  colo::ServiceParams& p = sc.params;
  const colo::ServiceParams def;
  p.name = Read<std::string>(d, "name", f);
  p.qos_ms = Read<double>(d, "qos_ms", f);
  p.percentile = Read<double>(d, "percentile", f, def.percentile);
  p.service_ms = Read<double>(d, "service_ms", f);
  p.cv2 = Read<double>(d, "cv2", f, def.cv2);
  p.ipc = Read<double>(d, "ipc", f);
  p.ref_freq_mhz = Read<double>(d, "ref_freq_mhz", f, def.ref_freq_mhz);
  p.ref_cache_mb = Read<double>(d, "ref_cache_mb", f, def.ref_cache_mb);
  p.ref_mem_latency_ns = Read<double>(d, "ref_mem_latency_ns", f, def.ref_mem_latency_ns);
  p.mlp = Read<double>(d, "mlp", f, def.mlp);
  p.bytes_per_miss = Read<double>(d, "bytes_per_miss", f, def.bytes_per_miss);
  if (!d.contains("mrc")) throw std::invalid_argument(f + ".mrc: missing");
  const py::dict mrc = ReadDict(d, "mrc", f);
  const std::string fm = f + ".mrc";
  CheckKeys(mrc, fm, {"floor", "pow", "alpha", "hot", "hot_mb", "hot_width_mb"});
  p.mrc.floor = Read<double>(mrc, "floor", fm);
  p.mrc.pow = Read<double>(mrc, "pow", fm);
  p.mrc.alpha = Read<double>(mrc, "alpha", fm);
  p.mrc.hot = Read<double>(mrc, "hot", fm, def.mrc.hot);
  p.mrc.hot_mb = Read<double>(mrc, "hot_mb", fm, def.mrc.hot_mb);
  p.mrc.hot_width_mb = Read<double>(mrc, "hot_width_mb", fm, def.mrc.hot_width_mb);
  p.io_ms = Read<double>(d, "io_ms", f, def.io_ms);
  p.smt_penalty = Read<double>(d, "smt_penalty", f, def.smt_penalty);
  p.ctx_overhead = Read<double>(d, "ctx_overhead", f, def.ctx_overhead);
  p.warmup_s = Read<double>(d, "warmup_s", f, def.warmup_s);
  p.warmup_slowdown = Read<double>(d, "warmup_slowdown", f, def.warmup_slowdown);
  p.virt_memory_gb = Read<double>(d, "virt_memory_gb", f, def.virt_memory_gb);
  p.res_memory_gb = Read<double>(d, "res_memory_gb", f, def.res_memory_gb);
  colo::Workload& w = sc.workload;
  w.rps = Read<double>(d, "rps", f, 0.0);
  w.threads = ReadCount(d, "threads", f, 0);
  w.launch_s = Read<double>(d, "launch_s", f, 0.0);
  w.end_s = Read<double>(d, "end_s", f, std::numeric_limits<double>::infinity());
  w.changes = Read<std::vector<std::pair<double, double>>>(d, "changes", f, {});
  w.cores = d.contains("cores") && !d["cores"].is_none() ? Read<int64_t>(d, "cores", f) : -1;
  w.ways = d.contains("ways") && !d["ways"].is_none() ? Read<int64_t>(d, "ways", f) : -1;
  if (w.cores < -1 || w.ways < -1)
    throw std::invalid_argument(f + (w.cores < -1 ? ".cores" : ".ways") + ": must be >= 0");
  return sc;
}

colo::ColoConfig ParseColoConfig(const py::dict& d) {
  CheckKeys(d, "",
            {"platform", "services", "dt_s", "seed", "mode", "on_launch", "sharing", "noise", "latency_window_s",
             "latency_cap_s"});
  colo::ColoConfig c;
  if (!d.contains("platform")) throw std::invalid_argument("platform: missing");
  c.platform = ParsePlatform(ReadDict(d, "platform", ""));
  if (!d.contains("services")) throw std::invalid_argument("services: missing");
  py::object services = d["services"];
  if (!py::isinstance<py::list>(services) && !py::isinstance<py::tuple>(services))
    throw std::invalid_argument("services: must be a list");
  size_t i = 0;
  for (auto item : services) {
    const std::string f = "services[" + std::to_string(i++) + "]";
    if (!py::isinstance<py::dict>(item)) throw std::invalid_argument(f + ": must be a mapping");
    c.services.push_back(ParseService(item.cast<py::dict>(), f));
  }
  c.dt_s = Read<double>(d, "dt_s", "", c.dt_s);
  const int64_t seed = Read<int64_t>(d, "seed", "", 0);
  if (seed < 0) throw std::invalid_argument("seed: must be >= 0, got " + std::to_string(seed));
  c.seed = static_cast<uint64_t>(seed);
  c.mode = Choice<colo::Mode>(Read<std::string>(d, "mode", "", std::string("online")), "mode",
                              {{"online", colo::Mode::kOnline}, {"fresh", colo::Mode::kFresh}});
  c.on_launch = Choice<colo::OnLaunch>(Read<std::string>(d, "on_launch", "", std::string("none")), "on_launch",
                                       {{"none", colo::OnLaunch::kNone}, {"idle", colo::OnLaunch::kIdle}});
  c.sharing = Read<bool>(d, "sharing", "", false);
  if (d.contains("noise") && !d["noise"].is_none()) {
    const py::dict n = ReadDict(d, "noise", "");
    CheckKeys(n, "noise", {"latency", "counters"});
    c.noise.latency = Read<double>(n, "latency", "noise", c.noise.latency);
    c.noise.counters = Read<double>(n, "counters", "noise", c.noise.counters);
  }
  c.latency_window_s = Read<double>(d, "latency_window_s", "", c.latency_window_s);
  c.latency_cap_s = Read<double>(d, "latency_cap_s", "", c.latency_cap_s);
  c.Validate();
  return c;
}

// A per-service vector from a scalar or a 1-D array of NumServices() values.
std::vector<double> PerService(const py::object& v, uint32_t n, const char* name, double fallback_each,
                               const std::vector<double>* current = nullptr) {
  std::vector<double> out(n);
  if (v.is_none()) {
    for (uint32_t i = 0; i < n; ++i) out[i] = current ? (*current)[i] : fallback_each;
    return out;
  }
  DArray a = DArray::ensure(v);
  if (!a) throw std::invalid_argument(std::string(name) + ": must be a number or an array of numbers");
  if (a.ndim() == 0) {
    std::fill(out.begin(), out.end(), *a.data());
    return out;
  }
  if (a.ndim() != 1 || a.shape(0) != n)
    throw std::invalid_argument(std::string(name) + ": must have shape (" + std::to_string(n) + ",)");
  std::copy(a.data(), a.data() + n, out.begin());
  return out;
}

std::vector<uint32_t> Counts(const py::object& v, uint32_t n, const char* name) {
  DArray a = DArray::ensure(v);
  if (!a || a.ndim() != 1 || a.shape(0) != n)
    throw std::invalid_argument(std::string(name) + ": must be integers of shape (" + std::to_string(n) + ",)");
  std::vector<uint32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    const double x = a.data()[i];
    if (!(x >= 0) || x != std::floor(x) || x > double(int64_t{1} << 31))
      throw std::invalid_argument(std::string(name) + "[" + std::to_string(i) + "]: must be an integer >= 0, got " +
                                  std::string(py::str(py::float_(x))));
    out[i] = static_cast<uint32_t>(x);
  }
  return out;
}

std::vector<colo::Allocation> Allocations(const colo::ColoSim& sim, const py::object& cores, const py::object& ways,
                                          const py::object& mba, const py::object& freq) {
  const uint32_t n = sim.NumServices();
  const auto c = Counts(cores, n, "cores"), w = Counts(ways, n, "ways");
  std::vector<double> cur_mba(n), cur_freq(n);
  for (uint32_t i = 0; i < n; ++i) {
    cur_mba[i] = sim.Allocations()[i].mba;
    cur_freq[i] = sim.Allocations()[i].freq_mhz;
  }
  const auto m = PerService(mba, n, "mba", 1.0, &cur_mba), f = PerService(freq, n, "freq_mhz", 0.0, &cur_freq);
  std::vector<colo::Allocation> all(n);
  for (uint32_t i = 0; i < n; ++i) {
    all[i].cores = c[i];
    all[i].ways = w[i];
    all[i].mba = m[i];
    all[i].freq_mhz = f[i];
  }
  return all;
}

uint32_t ServiceIndex(const colo::ColoSim& sim, int64_t i) {
  if (i < 0 || i >= sim.NumServices())
    throw std::invalid_argument("service: must be in [0, " + std::to_string(sim.NumServices() - 1) + "], got " +
                                std::to_string(i));
  return static_cast<uint32_t>(i);
}

template <typename T, typename F>
py::array_t<T> PerServiceArray(const colo::ColoSim& sim, F f) {
  py::array_t<T> a(sim.NumServices());
  auto m = a.template mutable_unchecked<1>();
  for (uint32_t i = 0; i < sim.NumServices(); ++i) m(i) = f(i);
  return a;
}

}  // namespace
}  // namespace dcgym::bindings

void BindColo(py::module_& m) {
  namespace b = dcgym::bindings;
  namespace colo = dcgym::colo;
  using colo::ColoSim;

  m.def(
      "check_colo_config", [](const py::dict& d) { b::ParseColoConfig(d); }, py::arg("config"),
      "Validate a colo config dict in the engine; raises ValueError naming the bad field.");

  m.def(
      "step_colo_batch",
      [](const std::vector<ColoSim*>& sims, int64_t ticks) {
        if (ticks < 0) throw std::invalid_argument("ticks: must be >= 0, got " + std::to_string(ticks));
        py::gil_scoped_release release;
        colo::StepBatch(sims, static_cast<uint64_t>(ticks));
      },
      py::arg("sims"), py::arg("ticks") = 1,
      "Advance every ColoSim by `ticks` ticks in one C++ call (a vector env's step). Releases the GIL.");

  py::class_<ColoSim>(
      m, "ColoSim",
      "One server's cores, LLC ways and memory bandwidth shared by latency-critical services, advanced in "
      "analytic ticks (docs/colo.md; OSML FAST'23 §3, PARTIES ASPLOS'19, CLITE HPCA'20). Times in seconds, "
      "frequencies in MHz, bandwidth in GB/s; counters in OSML's units (counter_names).")
      .def(py::init([](const py::dict& d) { return std::make_unique<ColoSim>(b::ParseColoConfig(d)); }),
           py::arg("config"))
      .def(
          "reset",
          [](ColoSim& s, py::object seed) {
            int64_t v = seed.is_none() ? static_cast<int64_t>(s.Config().seed) : seed.cast<int64_t>();
            if (v < 0) throw std::invalid_argument("seed: must be >= 0, got " + std::to_string(v));
            s.Reset(static_cast<uint64_t>(v));
          },
          py::arg("seed") = py::none(),
          "Back to time 0 with the config's workload; every random stream derives from `seed` (default: the "
          "config's).")
      .def(
          "set_allocation",
          [](ColoSim& s, int64_t service, int64_t cores, int64_t ways, py::object mba, py::object freq_mhz) {
            const uint32_t i = b::ServiceIndex(s, service);
            if (cores < 0 || ways < 0)
              throw std::invalid_argument(std::string(cores < 0 ? "cores" : "ways") + ": must be >= 0, got " +
                                          std::to_string(cores < 0 ? cores : ways));
            colo::Allocation a = s.Allocations()[i];
            a.cores = static_cast<uint32_t>(std::min<int64_t>(cores, int64_t{1} << 31));
            a.ways = static_cast<uint32_t>(std::min<int64_t>(ways, int64_t{1} << 31));
            if (!mba.is_none()) a.mba = mba.cast<double>();
            if (!freq_mhz.is_none()) a.freq_mhz = freq_mhz.cast<double>();
            s.SetAllocation(i, a);
          },
          py::arg("service"), py::arg("cores"), py::arg("ways"), py::arg("mba") = py::none(),
          py::arg("freq_mhz") = py::none(),
          "Give a launched service `cores` private logical cores and `ways` LLC ways (mba: bandwidth cap as a "
          "fraction of peak, freq_mhz: its cores' frequency; None keeps the current value). Raises ValueError, "
          "changing nothing, when the platform's cores or ways would be exceeded or a value is out of range.")
      .def(
          "set_allocations",
          [](ColoSim& s, py::object cores, py::object ways, py::object mba, py::object freq_mhz) {
            s.SetAllocations(b::Allocations(s, cores, ways, mba, freq_mhz));
          },
          py::arg("cores"), py::arg("ways"), py::arg("mba") = py::none(), py::arg("freq_mhz") = py::none(),
          "Set every service's allocation at once (arrays of num_services; services not running get 0 cores "
          "and 0 ways); conservation is checked on the whole.")
      .def(
          "set_group",
          [](ColoSim& s, int64_t group, const std::vector<int64_t>& members, int64_t cores, int64_t ways) {
            if (group < 0) throw std::invalid_argument("group: must be >= 0, got " + std::to_string(group));
            if (cores < 0 || ways < 0) throw std::invalid_argument("cores and ways: must be >= 0");
            uint64_t mask = 0;
            for (int64_t i : members) mask |= uint64_t{1} << b::ServiceIndex(s, i);
            s.SetGroup(static_cast<uint32_t>(group), mask, static_cast<uint32_t>(cores), static_cast<uint32_t>(ways));
          },
          py::arg("group"), py::arg("members"), py::arg("cores"), py::arg("ways"),
          "Share group `group`: a pool of `cores` and `ways` its `members` (service indices) share on top of "
          "their private ones (OSML Algo. 4; Unmanaged = one group with everything). An empty member list "
          "dissolves it. Needs sharing: true.")
      .def(
          "set_rps", [](ColoSim& s, int64_t service, double rps) { s.SetRps(b::ServiceIndex(s, service), rps); },
          py::arg("service"), py::arg("rps"), "Offered load of a service from now on, requests/s.")
      .def(
          "step",
          [](ColoSim& s, int64_t ticks) {
            if (ticks < 0) throw std::invalid_argument("ticks: must be >= 0, got " + std::to_string(ticks));
            py::gil_scoped_release release;
            s.Step(static_cast<uint64_t>(ticks));
          },
          py::arg("ticks") = 1, "Advance `ticks` ticks of dt_s. Releases the GIL.")
      .def_property_readonly(
          "counters",
          [](py::object self) {
            const ColoSim& s = self.cast<const ColoSim&>();
            const py::ssize_t n = s.NumServices(), k = colo::kNumCounters;
            const py::ssize_t row = k * static_cast<py::ssize_t>(sizeof(double));
            py::array_t<double> view(std::vector<py::ssize_t>{n, k},
                                     std::vector<py::ssize_t>{row, static_cast<py::ssize_t>(sizeof(double))},
                                     s.Counters(), self);
            view.attr("setflags")(py::arg("write") = false);
            return view;
          },
          "Read-only view (num_services, len(counter_names)) of the counters, updated in place by step(): no "
          "copy; keep it and read it after each step.")
      .def(
          "steady_state",
          [](ColoSim& s, py::object cores, py::object ways, py::object rps, py::object mba, py::object freq_mhz) {
            const auto alloc = b::Allocations(s, cores, ways, mba, freq_mhz);
            const auto r = b::PerService(rps, s.NumServices(), "rps", 0.0);
            std::vector<double> out;
            {
              py::gil_scoped_release release;
              out = s.SteadyState(alloc, r);
            }
            return py::array_t<double>(static_cast<py::ssize_t>(out.size()), out.data());
          },
          py::arg("cores"), py::arg("ways"), py::arg("rps"), py::arg("mba") = py::none(),
          py::arg("freq_mhz") = py::none(),
          "Stationary latency quantile (s) of every service for this allocation and these loads (rps, "
          "requests/s): no backlog, warm caches, no noise, the current share groups. inf where the load reaches "
          "capacity, nan where rps <= 0 (absent). Does not change the simulation; for the Oracle and "
          "search-based schedulers.")
      .def(
          "steady_state_batch",
          [](ColoSim& s, b::DArray cores, b::DArray ways, b::DArray rps) {
            const py::ssize_t n = s.NumServices();
            if (cores.ndim() != 2 || cores.shape(1) != n || ways.ndim() != 2 || ways.shape(0) != cores.shape(0) ||
                ways.shape(1) != n)
              throw std::invalid_argument("cores, ways: must have the same shape (K, " + std::to_string(n) + ")");
            const py::ssize_t k = cores.shape(0);
            const bool per_row = rps.ndim() == 2;
            if (!((rps.ndim() == 1 && rps.shape(0) == n) || (per_row && rps.shape(0) == k && rps.shape(1) == n)))
              throw std::invalid_argument("rps: must have shape (" + std::to_string(n) + ",) or (K, " +
                                          std::to_string(n) + ")");
            py::array_t<double> out({k, n});
            double* o = out.mutable_data();
            const double* c = cores.data();
            const double* w = ways.data();
            const double* r = rps.data();
            for (py::ssize_t x = 0; x < k * n; ++x)
              if (!(c[x] >= 0 && w[x] >= 0 && c[x] == std::floor(c[x]) && w[x] == std::floor(w[x]) && c[x] <= 1e6 &&
                    w[x] <= 1e6))
                throw std::invalid_argument("cores, ways: must be integers >= 0, got " +
                                            std::string(py::str(py::float_(c[x]))) + " and " +
                                            std::string(py::str(py::float_(w[x]))));
            py::gil_scoped_release release;
            std::vector<colo::Allocation> alloc = s.Allocations();
            std::vector<double> row_rps(n);
            for (py::ssize_t row = 0; row < k; ++row) {
              for (py::ssize_t i = 0; i < n; ++i) {
                alloc[i].cores = static_cast<uint32_t>(c[row * n + i]);
                alloc[i].ways = static_cast<uint32_t>(w[row * n + i]);
                row_rps[i] = per_row ? r[row * n + i] : r[i];
              }
              const auto res = s.SteadyState(alloc, row_rps);
              std::copy(res.begin(), res.end(), o + row * n);
            }
            return out;
          },
          py::arg("cores"), py::arg("ways"), py::arg("rps"),
          "steady_state over K allocations: cores and ways (K, num_services), rps (num_services,) or (K, "
          "num_services); MBA caps and frequencies are the current ones. Returns (K, num_services) seconds. "
          "Releases the GIL; one simulation's steady states must not run in two threads at once (they share "
          "scratch space).")
      .def_property_readonly_static("counter_names",
                                    [](py::object) {
                                      py::list l;
                                      for (const char* name : colo::kCounterNames) l.append(name);
                                      return l;
                                    })
      .def_property_readonly("now_s", &ColoSim::Now)
      .def_property_readonly("ticks", &ColoSim::Ticks)
      .def_property_readonly("dt_s", [](const ColoSim& s) { return s.Config().dt_s; })
      .def_property_readonly("num_services", &ColoSim::NumServices)
      .def_property_readonly("service_names",
                             [](const ColoSim& s) {
                               py::list l;
                               for (const auto& sc : s.Config().services) l.append(sc.params.name);
                               return l;
                             })
      .def_property_readonly("qos_ms",
                             [](const ColoSim& s) {
                               return b::PerServiceArray<double>(
                                   s, [&](uint32_t i) { return s.Config().services[i].params.qos_ms; });
                             })
      .def_property_readonly(
          "phases",
          [](const ColoSim& s) {
            return b::PerServiceArray<uint8_t>(s, [&](uint32_t i) { return static_cast<uint8_t>(s.PhaseOf(i)); });
          },
          "Per service: 0 pending, 1 warming up, 2 running, 3 ended.")
      .def_property_readonly(
          "cores",
          [](const ColoSim& s) {
            return b::PerServiceArray<int64_t>(s, [&](uint32_t i) { return s.Allocations()[i].cores; });
          },
          "Private logical cores per service.")
      .def_property_readonly(
          "ways",
          [](const ColoSim& s) {
            return b::PerServiceArray<int64_t>(s, [&](uint32_t i) { return s.Allocations()[i].ways; });
          },
          "Private LLC ways per service.")
      .def_property_readonly("mba",
                             [](const ColoSim& s) {
                               return b::PerServiceArray<double>(s, [&](uint32_t i) { return s.Allocations()[i].mba; });
                             })
      .def_property_readonly("freq_mhz",
                             [](const ColoSim& s) {
                               return b::PerServiceArray<double>(
                                   s, [&](uint32_t i) { return s.Allocations()[i].freq_mhz; });
                             })
      .def_property_readonly(
          "groups",
          [](const ColoSim& s) {
            py::list l;
            for (const auto& g : s.Groups()) {
              if (g.Empty()) {
                l.append(py::none());
                continue;
              }
              py::list members;
              for (uint32_t i = 0; i < s.NumServices(); ++i)
                if ((g.members >> i) & 1) members.append(i);
              py::dict d;
              d["members"] = members;
              d["cores"] = g.cores;
              d["ways"] = g.ways;
              l.append(d);
            }
            return l;
          },
          "Share groups: None or {members, cores, ways} per group slot.")
      .def_property_readonly("idle_cores", &ColoSim::IdleCores)
      .def_property_readonly("idle_ways", &ColoSim::IdleWays)
      .def_property_readonly("mem_latency_ns", &ColoSim::MemLatencyNs, "Loaded memory latency of the last tick (ns).")
      .def_property_readonly("mem_utilization", &ColoSim::MemUtilization,
                             "Memory traffic of the last tick / peak bandwidth.");
}
