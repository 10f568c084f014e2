#include "dcgym/flow/config.hpp"

#include <cmath>
#include <string>

#include "dcgym/flow/topology.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/kernel/distribution.hpp"

namespace dcgym::flow {

using kernel::Fail;
using kernel::Str;

namespace {

void Range(uint64_t v, uint64_t lo, uint64_t hi, const std::string& field) {
  if (v < lo || v > hi) Fail(field, "must be in [" + Str(lo) + ", " + Str(hi) + "], got " + Str(v));
}

void NonNegative(double v, const std::string& field) {
  if (!(v >= 0) || !std::isfinite(v)) Fail(field, "must be a finite number >= 0, got " + Str(v));
}

void Positive(double v, const std::string& field) {
  if (!(v > 0) || !std::isfinite(v)) Fail(field, "must be a positive finite number, got " + Str(v));
}

void CheckLoad(double v, const std::string& field) {
  if (!(v >= 0) || !(v <= kMaxHostLoad))
    Fail(field, "must be in [0, " + Str(kMaxHostLoad) + "] (a fraction of a host link's capacity), got " + Str(v));
}

void AtMost(double v, double hi, const std::string& field) {
  if (!(v <= hi)) Fail(field, "must be at most " + Str(hi) + ", got " + Str(v));
}

void CheckSizes(const SizeConfig& s, const std::string& field) {
  if (s.name == "cdf") {
    kernel::Distribution::Empirical(s.cdf, field);  // throws naming field.cdf[i]
  } else {
    NamedCdf(s.name, field);
    if (!s.cdf.empty()) Fail(field + ".cdf", "only with sizes 'cdf', got a named workload '" + s.name + "'");
  }
}

const char* DisciplineName(Discipline d) {
  switch (d) {
    case Discipline::kFair: return "fair";
    case Discipline::kQsjf: return "qsjf";
    case Discipline::kMlfq: return "mlfq";
    case Discipline::kLas: return "las";
    case Discipline::kSrpt: return "srpt";
  }
  return "";
}

void CheckTopology(const TopologyConfig& t) {
  Positive(t.link_gbps, "topology.link_gbps");
  AtMost(t.link_gbps, kMaxLinkGbps, "topology.link_gbps");
  switch (t.kind) {
    case TopologyKind::kSingleLink: Range(t.hosts, 1, kMaxHosts, "topology.senders"); break;
    case TopologyKind::kBigSwitch: Range(t.hosts, 2, kMaxHosts, "topology.hosts"); break;
    case TopologyKind::kPlanes:
      Range(t.hosts, 2, kMaxHosts, "topology.hosts");
      Range(t.planes, 1, kMaxPlanes, "topology.planes");
      break;
    case TopologyKind::kLeafSpine:
      Range(t.racks, 1, kMaxHosts, "topology.racks");
      Range(t.hosts_per_rack, 1, kMaxHosts, "topology.hosts_per_rack");
      Range(uint64_t{t.racks} * t.hosts_per_rack, 2, kMaxHosts, "topology: racks x hosts_per_rack");
      Range(t.spines, 1, kMaxSpines, "topology.spines");
      Positive(t.oversubscription, "topology.oversubscription");
      AtMost(t.oversubscription, kMaxOversubscription, "topology.oversubscription");
      break;
  }
  const uint64_t links = NumLinks(t);
  if (links > kMaxLinks) Fail("topology", "at most " + Str(kMaxLinks) + " links, got " + Str(links));
}

}  // namespace

TopologyConfig TopologyConfig::Of(TopologyKind kind) {
  TopologyConfig t;
  t.kind = kind;
  if (kind == TopologyKind::kSingleLink) t.hosts = 1;
  if (kind == TopologyKind::kPlanes) t.hosts = 32, t.planes = 3;
  return t;
}

uint32_t FlowConfig::DefaultLevels(Discipline d) {
  return d == Discipline::kLas || d == Discipline::kSrpt ? 1 : kMaxLevels;
}

uint32_t FlowConfig::NumHosts() const {
  return topology.kind == TopologyKind::kLeafSpine ? topology.racks * topology.hosts_per_rack : topology.hosts;
}

void FlowConfig::Validate() const {
  CheckTopology(topology);
  const uint32_t n = NumHosts();
  const bool single = topology.kind == TopologyKind::kSingleLink;
  const std::string disc = DisciplineName(discipline);

  Range(levels, 1, kMaxLevels, "scheduling.levels");
  const bool ranked = discipline == Discipline::kQsjf || discipline == Discipline::kMlfq;
  if (ranked) {
    if (thresholds.size() != levels - 1)
      Fail("scheduling.thresholds",
           "'" + disc + "' needs levels - 1 = " + Str(levels - 1) + " thresholds, got " + Str(thresholds.size()));
    for (size_t i = 0; i < thresholds.size(); ++i) {
      Positive(thresholds[i], "scheduling.thresholds[" + Str(i) + "]");
      if (i > 0 && thresholds[i] < thresholds[i - 1])
        Fail("scheduling.thresholds[" + Str(i) + "]",
             "must be >= the one before (" + Str(thresholds[i - 1]) + "), got " + Str(thresholds[i]));
    }
  } else if (!thresholds.empty()) {
    Fail("scheduling.thresholds", "'" + disc + "' takes no thresholds, got " + Str(thresholds.size()));
  }
  if (discipline == Discipline::kLas || discipline == Discipline::kSrpt) {
    if (levels != 1) Fail("scheduling.levels", "'" + disc + "' orders flows itself: must be 1, got " + Str(levels));
  }
  if (discipline == Discipline::kLas && !single)
    Fail("scheduling.discipline",
         "'las' (exact fluid least attained service) needs topology single_link; on a "
         "network use 'mlfq' with thresholds");

  if (groups.empty()) Fail("workload.groups", "needs at least one group");
  if (groups.size() > n)
    Fail("workload.groups", "at most one group per host (" + Str(n) + "), got " + Str(groups.size()));
  uint64_t covered = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string f = implicit_group ? "workload" : "workload.groups[" + Str(g) + "]";
    CheckSizes(groups[g].sizes, f + ".sizes");
    CheckLoad(groups[g].load, f + ".load");
    if (groups.size() > 1 && groups[g].hosts == 0) Fail(f + ".hosts", "must be >= 1 when there are several groups");
    covered += groups[g].hosts;
  }
  if (!(groups.size() == 1 && groups[0].hosts == 0) && covered != n)
    Fail("workload.groups", "hosts of the groups must add up to the " + Str(n) + " hosts, got " + Str(covered));

  if (!traffic_matrix.empty()) {
    if (single) Fail("workload.traffic_matrix", "single_link has one destination; no traffic matrix");
    if (traffic_matrix.size() != n)
      Fail("workload.traffic_matrix", "needs one row per host (" + Str(n) + "), got " + Str(traffic_matrix.size()));
    for (uint32_t i = 0; i < n; ++i) {
      const std::string f = "workload.traffic_matrix[" + Str(i) + "]";
      if (traffic_matrix[i].size() != n) Fail(f, "needs " + Str(n) + " entries, got " + Str(traffic_matrix[i].size()));
      double total = 0;
      for (uint32_t j = 0; j < n; ++j) {
        NonNegative(traffic_matrix[i][j], f + "[" + Str(j) + "]");
        total += traffic_matrix[i][j];
      }
      if (traffic_matrix[i][i] != 0) Fail(f + "[" + Str(i) + "]", "a host sends nothing to itself: must be 0");
      if (!(total > 0)) Fail(f, "every host needs a destination: the row must have a positive entry");
    }
  }

  double last = 0;
  for (size_t i = 0; i < dynamics.size(); ++i) {
    const ChangeConfig& c = dynamics[i];
    const std::string f = "workload.dynamics[" + Str(i) + "]";
    NonNegative(c.time_s, f + ".time_s");
    if (c.time_s < last) Fail(f + ".time_s", "changes must be in time order; " + Str(c.time_s) + " < " + Str(last));
    last = c.time_s;
    if (c.group < -1 || c.group >= static_cast<int32_t>(groups.size()))
      Fail(f + ".group",
           "must be a group index in [0, " + Str(groups.size() - 1) + "] or none (every group), got " + Str(c.group));
    if (c.load) CheckLoad(*c.load, f + ".load");
    if (c.change_sizes) CheckSizes(c.sizes, f + ".sizes");
    if (!c.load && !c.change_sizes) Fail(f, "changes nothing: give load and/or sizes");
  }

  if (!trace.empty()) {
    if (!dynamics.empty()) Fail("workload.dynamics", "not with a trace (the trace fixes every arrival)");
    const Topology topo(topology);
    last = 0;
    for (size_t i = 0; i < trace.size(); ++i) {
      const TraceFlow& t = trace[i];
      const std::string f = "workload.trace[" + Str(i) + "]";
      NonNegative(t.time_s, f + ".time_s");
      if (t.time_s < last) Fail(f + ".time_s", "flows must be in time order; " + Str(t.time_s) + " < " + Str(last));
      last = t.time_s;
      Range(t.src, 0, n - 1, f + ".src");
      if (!single) {
        Range(t.dst, 0, n - 1, f + ".dst");
        if (t.dst == t.src) Fail(f + ".dst", "must differ from src (" + Str(t.src) + ")");
      }
      Positive(t.size_bytes, f + ".size_bytes");
      const uint32_t dst = single ? topo.Receiver() : t.dst;
      if (t.path != -1)
        Range(static_cast<uint64_t>(std::max(t.path, 0)), 0, topo.NumPaths(t.src, dst) - 1, f + ".path");
      if (t.path < -1) Fail(f + ".path", "must be a path index or -1 (ECMP), got " + Str(t.path));
      if (t.priority < -1 || t.priority >= static_cast<int32_t>(levels))
        Fail(f + ".priority", "must be in [0, " + Str(levels - 1) + "] or -1, got " + Str(t.priority));
      if (!(t.cap_gbps >= 0)) Fail(f + ".cap_gbps", "must be >= 0 or none, got " + Str(t.cap_gbps));
      const bool acts = t.priority != -1 || t.cap_gbps != kNoCap;
      if (acts && (discipline == Discipline::kLas || discipline == Discipline::kSrpt))
        Fail(f, "'" + disc + "' takes no per-flow priority or cap");
    }
  }

  NonNegative(base_rtt_us, "base_rtt_us");
  AtMost(base_rtt_us, kMaxBaseRttUs, "base_rtt_us");
  NonNegative(long_flow_bytes, "long_flow_bytes");
  Range(observation.short_finished, 0, kMaxObservation, "observation.short_finished");
  Range(observation.long_active, 0, kMaxObservation, "observation.long_active");
  Range(observation.long_finished, 0, kMaxObservation, "observation.long_finished");
}

const std::vector<std::pair<double, double>>& NamedCdf(const std::string& name, const std::string& field) {
  static const std::vector<std::pair<double, double>> kWebSearch = {
      {0, 0},        {10000, 0.15},  {20000, 0.2},   {30000, 0.3},   {50000, 0.4},     {80000, 0.53},
      {200000, 0.6}, {1000000, 0.7}, {2000000, 0.8}, {5000000, 0.9}, {10000000, 0.97}, {30000000, 1}};
  static const std::vector<std::pair<double, double>> kDataMining = {
      {0, 0},      {180, 0.1},   {216, 0.2},    {560, 0.3},      {900, 0.4},        {1100, 0.5},    {1870, 0.6},
      {3160, 0.7}, {10000, 0.8}, {400000, 0.9}, {3160000, 0.95}, {100000000, 0.98}, {1000000000, 1}};
  if (name == "web_search") return kWebSearch;
  if (name == "data_mining") return kDataMining;
  Fail(field, "unknown workload '" + name + "'; allowed: web_search, data_mining, cdf");
}

std::vector<std::string> NamedCdfs() { return {"web_search", "data_mining"}; }

}  // namespace dcgym::flow
