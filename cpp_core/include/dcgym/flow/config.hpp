// Configuration of a flow simulation, as the engine receives it.
//
// Units: bytes and seconds inside the engine; the config gives link rates in
// Gbps (10^9 bit/s) and the base RTT in microseconds, as papers state them.
// Validate() refuses a bad config with std::invalid_argument naming the
// field, the value and what is allowed; the binding builds this struct from
// a plain dict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dcgym/flow/solver.hpp"

namespace dcgym::flow {

// The bounds of a flow config, checked by FlowConfig::Validate() and exported by the binding
// (FlowSim.limits), whose values the scenario schema's fields take as their bounds.
inline constexpr uint32_t kMaxHosts = 1u << 16;
inline constexpr uint64_t kMaxLinks = 1u << 18;  // the solver keeps levels x links cells
inline constexpr uint32_t kMaxPlanes = 64, kMaxSpines = 64;
inline constexpr uint32_t kMaxObservation = 1u << 16;  // rows of each observed flow list
inline constexpr double kMaxHostLoad = 64;             // a group's load; planes: up to one per plane
inline constexpr double kMaxLinkGbps = 1e5;
inline constexpr double kMaxOversubscription = 1000;
inline constexpr double kMaxBaseRttUs = 1e6;

// Units at the engine's edge: it runs in bytes and seconds; configs and results give rates in Gbps (10^9
// bit/s), thresholds may come in packets (PIAS counts 1460-byte segments).
inline constexpr double kBytesPerGbit = 1e9 / 8;
inline constexpr uint32_t kPacketBytes = 1460;
inline double BytesPerSecond(double gbps) { return gbps * kBytesPerGbit; }
inline double Gbps(double bytes_per_second) { return bytes_per_second / kBytesPerGbit; }
inline std::vector<double> PacketsToBytes(std::vector<double> packets) {
  for (double& p : packets) p *= kPacketBytes;
  return packets;
}

enum class TopologyKind {
  kSingleLink,  // senders share one bottleneck link: the M/G/1 setting
  kBigSwitch,   // each host has an uplink and a downlink into one non-blocking switch
  kPlanes,      // `planes` parallel big switches; a host has one port (uplink + downlink) in each
  kLeafSpine,   // racks of hosts under ToR switches, every ToR linked to every spine
};

struct TopologyConfig {
  // The defaults of a topology of `kind` (a single link has one sender, planes 32 hosts on 3 planes, AuTO's
  // testbed; leaf-spine PIAS's 9 racks of 16 under 4 spines).
  static TopologyConfig Of(TopologyKind kind);

  TopologyKind kind = TopologyKind::kBigSwitch;
  uint32_t hosts = 16;  // single_link: senders; big_switch, planes: hosts
  uint32_t planes = 1;  // planes: parallel planes (AuTO's testbed: 3)
  uint32_t racks = 9;   // leaf_spine
  uint32_t hosts_per_rack = 16;
  uint32_t spines = 4;
  // leaf_spine: a rack's host capacity over its capacity towards the spines
  // (1 = non-blocking); each ToR-spine link carries
  // hosts_per_rack x link_gbps / (spines x oversubscription).
  double oversubscription = 1.0;
  double link_gbps = 1.0;  // every host link (and the single link)
};

enum class Discipline {
  kFair,  // one queue per level, flows start at level 0 (levels > 1 only through actions)
  kQsjf,  // level from the known size: size <= thresholds[0] -> level 0, ...
  kMlfq,  // PIAS / QLAS: start at level 0, demoted when bytes sent reach thresholds[level]
  kLas,   // least attained service (foreground-background), exact fluid; single_link only
  kSrpt,  // shortest remaining size first, greedy over the path; exact on single_link
};

// A flow-size distribution: a named one or a piecewise-linear CDF through
// (bytes, cumulative probability) points.
struct SizeConfig {
  std::string name = "web_search";             // web_search, data_mining, or cdf
  std::vector<std::pair<double, double>> cdf;  // for name == "cdf"
};

// Hosts that share a workload and a load (AuTO §6.1.2). Groups take
// consecutive host indices in order. Load is a fraction of one host link's
// capacity (link_gbps): each host of the group offers load x link_gbps on
// average. With one link per host (big_switch, leaf_spine) every host link
// then carries `load` under uniform traffic; in `planes` a host spreads
// its traffic over its P ports, each carrying load / P (so load may exceed
// 1, up to P). In single_link the group's hosts together offer load x the
// link's capacity.
struct GroupConfig {
  uint32_t hosts = 0;  // 0 in a config with one group: every host
  SizeConfig sizes;
  double load = 0.5;
};

// A change of load and/or sizes at a given time (AuTO §6.1.3).
struct ChangeConfig {
  double time_s = 0;
  int32_t group = -1;          // -1: every group
  std::optional<double> load;  // none: unchanged
  bool change_sizes = false;
  SizeConfig sizes;
};

// One flow of a given trace (replaces the Poisson arrivals).
struct TraceFlow {
  double time_s = 0;
  uint32_t src = 0, dst = 0;
  double size_bytes = 0;
  int32_t path = -1;      // -1: ECMP
  int32_t priority = -1;  // -1: the discipline's level; else pinned at this level
  double cap_gbps = kNoCap;
};

struct ObservationConfig {
  uint32_t short_finished = 100;  // AuTO m_s
  uint32_t long_active = 11;      // AuTO n_l
  uint32_t long_finished = 10;    // AuTO m_l
};

struct FlowConfig {
  // The default number of priority levels of a discipline: las and srpt order flows themselves (1 level).
  static uint32_t DefaultLevels(Discipline d);

  TopologyConfig topology;
  Discipline discipline = Discipline::kMlfq;
  uint32_t levels = 8;
  std::vector<double> thresholds;  // bytes; levels - 1 of them for qsjf and mlfq
  std::vector<GroupConfig> groups = {GroupConfig{}};
  bool implicit_group = false;  // the one group came as workload.sizes / workload.load (error messages say so)
  std::vector<std::vector<double>> traffic_matrix;  // hosts x hosts weights; empty: uniform over the others
  std::vector<ChangeConfig> dynamics;
  std::vector<TraceFlow> trace;
  double base_rtt_us = 0;  // added to every FCT (reported beside the fluid FCT)
  uint64_t seed = 1;
  uint64_t warmup_flows = 0;   // the first arrivals are left out of the statistics
  uint64_t measure_flows = 0;  // then this many arrivals are measured (0: every later one)
  double long_flow_bytes = 0;  // 0: the last threshold (mlfq), else 1 MiB
  ObservationConfig observation;
  bool incremental = true;    // false: the solver recomputes everything at every event
  bool record_flows = false;  // keep every completion (tests; memory grows with flows)

  // Throws std::invalid_argument naming the first bad field.
  void Validate() const;
  uint32_t NumHosts() const;
};

inline constexpr double kDefaultLongFlowBytes = 1024.0 * 1024.0;

// The built-in flow-size CDFs, (bytes, probability): web search (DCTCP,
// Alizadeh et al. SIGCOMM 2010) and data mining (VL2, Greenberg et al.
// SIGCOMM 2009), as PIAS (Bai et al. NSDI 2015) and AuTO use them.
const std::vector<std::pair<double, double>>& NamedCdf(const std::string& name, const std::string& field);
std::vector<std::string> NamedCdfs();

}  // namespace dcgym::flow
