// Binding of the colo model (dcgym/colo/): one server's cores, LLC ways and
// memory bandwidth shared by latency-critical services. Reads the config
// dict (built from envs/colo/catalog.yaml) and binds; no model logic here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert.hpp"
#include "dcgym/colo/colo_sim.hpp"

namespace py = pybind11;
using namespace pybind11::literals;  // "name"_a, for the limits

namespace dcgym::bindings {
namespace {

namespace colo = dcgym::colo;
using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

colo::Platform ParsePlatform(const py::dict& d) {
  const std::string f = "platform";
  OnlyKeys(d, f, colo::kPlatformFields);
  colo::Platform p;
  p.name = Get<std::string>(d, "name", f, p.name);
  p.logical_cores = Get<uint32_t>(d, "logical_cores", f);
  p.physical_cores = Get<uint32_t>(d, "physical_cores", f);
  p.ways = Get<uint32_t>(d, "ways", f);
  p.mb_per_way = Get<double>(d, "mb_per_way", f);
  p.mem_bw_gbs = Get<double>(d, "mem_bw_gbs", f);
  p.freq_min_mhz = Get<double>(d, "freq_min_mhz", f);
  p.freq_max_mhz = Get<double>(d, "freq_max_mhz", f);
  p.mem_latency_ns = Get<double>(d, "mem_latency_ns", f);
  p.smt_gain = Get<double>(d, "smt_gain", f);
  p.mba = Get<bool>(d, "mba", f);
  return p;
}

colo::ServiceConfig ParseService(const py::dict& d, const std::string& f) {
  std::vector<const char*> keys(std::begin(colo::kServiceFields), std::end(colo::kServiceFields));
  keys.insert(keys.end(), std::begin(colo::kWorkloadFields), std::end(colo::kWorkloadFields));
  OnlyKeys(d, f, keys);
  colo::ServiceConfig sc;
  colo::ServiceParams& p = sc.params;
  p.name = Get<std::string>(d, "name", f);
  p.qos_ms = Get<double>(d, "qos_ms", f);
  p.percentile = Get<double>(d, "percentile", f, p.percentile);
  p.service_ms = Get<double>(d, "service_ms", f);
  p.cv2 = Get<double>(d, "cv2", f, p.cv2);
  p.ipc = Get<double>(d, "ipc", f);
  p.ref_freq_mhz = Get<double>(d, "ref_freq_mhz", f, p.ref_freq_mhz);
  p.ref_cache_mb = Get<double>(d, "ref_cache_mb", f, p.ref_cache_mb);
  p.ref_mem_latency_ns = Get<double>(d, "ref_mem_latency_ns", f, p.ref_mem_latency_ns);
  p.mlp = Get<double>(d, "mlp", f, p.mlp);
  p.bytes_per_miss = Get<double>(d, "bytes_per_miss", f, p.bytes_per_miss);
  const std::string fm = Path(f, "mrc");
  const py::dict mrc = GetDict(d, "mrc", f);
  OnlyKeys(mrc, fm, colo::kMissRateFields);
  p.mrc.floor = Get<double>(mrc, "floor", fm);
  p.mrc.pow = Get<double>(mrc, "pow", fm);
  p.mrc.alpha = Get<double>(mrc, "alpha", fm);
  p.mrc.hot = Get<double>(mrc, "hot", fm, p.mrc.hot);
  p.mrc.hot_mb = Get<double>(mrc, "hot_mb", fm, p.mrc.hot_mb);
  p.mrc.hot_width_mb = Get<double>(mrc, "hot_width_mb", fm, p.mrc.hot_width_mb);
  p.io_ms = Get<double>(d, "io_ms", f, p.io_ms);
  p.smt_penalty = Get<double>(d, "smt_penalty", f, p.smt_penalty);
  p.ctx_overhead = Get<double>(d, "ctx_overhead", f, p.ctx_overhead);
  p.warmup_s = Get<double>(d, "warmup_s", f, p.warmup_s);
  p.warmup_slowdown = Get<double>(d, "warmup_slowdown", f, p.warmup_slowdown);
  p.virt_memory_gb = Get<double>(d, "virt_memory_gb", f, p.virt_memory_gb);
  p.res_memory_gb = Get<double>(d, "res_memory_gb", f, p.res_memory_gb);
  colo::Workload& w = sc.workload;
  w.rps = Get<double>(d, "rps", f, w.rps);
  w.threads = Get<uint32_t>(d, "threads", f, w.threads);
  w.launch_s = Get<double>(d, "launch_s", f, w.launch_s);
  w.end_s = Get<double>(d, "end_s", f, w.end_s);
  w.changes = Get<std::vector<std::pair<double, double>>>(d, "changes", f, w.changes);
  w.cores = Get<int64_t>(d, "cores", f, w.cores);
  w.ways = Get<int64_t>(d, "ways", f, w.ways);
  return sc;
}

colo::ColoConfig ParseColoConfig(const py::dict& d) {
  OnlyKeys(d, "",
           {"platform", "services", "dt_s", "seed", "mode", "on_launch", "sharing", "noise", "latency_window_s",
            "latency_cap_s"});
  colo::ColoConfig c;
  c.platform = ParsePlatform(GetDict(d, "platform", ""));
  Required(d, "services", "");
  ForEachItem(d, "services", "",
              [&](const py::dict& s, const std::string& f) { c.services.push_back(ParseService(s, f)); });
  c.dt_s = Get<double>(d, "dt_s", "", c.dt_s);
  c.seed = Get<uint64_t>(d, "seed", "", c.seed);
  if (Has(d, "mode"))
    c.mode = Choice<colo::Mode>(Get<std::string>(d, "mode", ""), "mode",
                                {{"online", colo::Mode::kOnline}, {"fresh", colo::Mode::kFresh}});
  if (Has(d, "on_launch"))
    c.on_launch = Choice<colo::OnLaunch>(Get<std::string>(d, "on_launch", ""), "on_launch",
                                         {{"none", colo::OnLaunch::kNone}, {"idle", colo::OnLaunch::kIdle}});
  c.sharing = Get<bool>(d, "sharing", "", c.sharing);
  const py::dict n = GetDictOrEmpty(d, "noise", "");
  OnlyKeys(n, "noise", {"latency", "counters"});
  c.noise.latency = Get<double>(n, "latency", "noise", c.noise.latency);
  c.noise.counters = Get<double>(n, "counters", "noise", c.noise.counters);
  c.latency_window_s = Get<double>(d, "latency_window_s", "", c.latency_window_s);
  c.latency_cap_s = Get<double>(d, "latency_cap_s", "", c.latency_cap_s);
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
        const auto count = b::Count(ticks, "ticks");
        py::gil_scoped_release release;
        colo::StepBatch(sims, count);
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
      .def_property_readonly_static(
          "limits",
          [](py::object) {
            using C = colo::ColoConfig;
            return py::dict("logical_cores"_a = colo::kMaxCores, "ways"_a = colo::kMaxWays,
                            "smt_gain"_a = colo::kMaxSmtGain, "threads"_a = colo::kMaxThreads,
                            "services"_a = C::kMaxServices, "groups"_a = C::kMaxGroups, "dt_s"_a = C::kMaxTickS,
                            "window_ticks"_a = C::kMaxWindowTicks, "noise_counters"_a = C::kMaxCounterNoise);
          },
          "The largest value of each bounded config field (colo/*.hpp): the schema's bounds.")
      .def_property_readonly_static(
          "platform_fields", [](py::object) { return b::NameList(colo::kPlatformFields); },
          "The fields of the config's platform, in the schema's order.")
      .def_property_readonly_static(
          "service_fields", [](py::object) { return b::NameList(colo::kServiceFields); },
          "A service's parameters (ServiceParams), in the schema's order; mrc's are mrc_fields.")
      .def_property_readonly_static(
          "mrc_fields", [](py::object) { return b::NameList(colo::kMissRateFields); },
          "The fields of a service's miss-rate curve.")
      .def_property_readonly_static(
          "workload_fields", [](py::object) { return b::NameList(colo::kWorkloadFields); },
          "A service entry's workload fields (beside its parameters).")
      .def(
          "reset",
          [](ColoSim& s, std::optional<int64_t> seed) { s.Reset(seed ? b::Count(*seed, "seed") : s.Config().seed); },
          py::arg("seed") = py::none(),
          "Back to time 0 with the config's workload; every random stream derives from `seed` (default: the "
          "config's).")
      .def(
          "set_allocation",
          [](ColoSim& s, int64_t service, int64_t cores, int64_t ways, std::optional<double> mba,
             std::optional<double> freq_mhz) {
            const auto i = b::Count<uint32_t>(service, "service");
            colo::Allocation a = s.AllocationOf(i);
            a.cores = b::Count<uint32_t>(cores, "cores");
            a.ways = b::Count<uint32_t>(ways, "ways");
            a.mba = mba.value_or(a.mba);
            a.freq_mhz = freq_mhz.value_or(a.freq_mhz);
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
            std::vector<uint32_t> services;
            for (int64_t i : members) services.push_back(b::Count<uint32_t>(i, "members"));
            s.SetGroup(b::Count<uint32_t>(group, "group"), services, b::Count<uint32_t>(cores, "cores"),
                       b::Count<uint32_t>(ways, "ways"));
          },
          py::arg("group"), py::arg("members"), py::arg("cores"), py::arg("ways"),
          "Share group `group`: a pool of `cores` and `ways` its `members` (service indices) share on top of "
          "their private ones (OSML Algo. 4; Unmanaged = one group with everything). An empty member list "
          "dissolves it. Needs sharing: true.")
      .def(
          "set_rps",
          [](ColoSim& s, int64_t service, double rps) { s.SetRps(b::Count<uint32_t>(service, "service"), rps); },
          py::arg("service"), py::arg("rps"), "Offered load of a service from now on, requests/s.")
      .def(
          "step",
          [](ColoSim& s, int64_t ticks) {
            const auto count = b::Count(ticks, "ticks");
            py::gil_scoped_release release;
            s.Step(count);
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
      .def_property_readonly_static("counter_names", [](py::object) { return b::NameList(colo::kCounterNames); })
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
