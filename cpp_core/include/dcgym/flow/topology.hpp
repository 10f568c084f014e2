// The links of a flow network and the paths between hosts.
//
// Links are unidirectional, numbered as follows (N hosts, P planes, R racks,
// S spines):
//   single_link  0: the bottleneck every flow crosses
//   big_switch   uplink of host h: h;  downlink of h: N + h
//   planes       plane p: uplink of h: 2Np + h;  downlink: 2Np + N + h
//   leaf_spine   uplink of h: h;  downlink: N + h;  ToR r to spine s: 2N + rS + s;
//                spine s to ToR r: 2N + RS + sR + r
// A path index picks the plane (planes) or the spine (leaf_spine, between
// racks); there is one path otherwise. Capacities are in bytes per second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcgym/flow/config.hpp"
#include "dcgym/flow/solver.hpp"

namespace dcgym::flow {

// The links a topology of `config` has (the numbering above), without building it: what Validate bounds.
uint64_t NumLinks(const TopologyConfig& config);

class Topology {
 public:
  explicit Topology(const TopologyConfig& config);

  TopologyKind Kind() const { return config_.kind; }
  uint32_t NumHosts() const { return hosts_; }
  uint32_t NumLinks() const { return static_cast<uint32_t>(capacity_.size()); }
  const std::vector<double>& Capacity() const { return capacity_; }
  // The destination every single_link flow has: one receiver behind the link.
  uint32_t Receiver() const { return hosts_; }

  uint32_t NumPaths(uint32_t src, uint32_t dst) const;
  uint32_t MaxPaths() const;
  Path Route(uint32_t src, uint32_t dst, uint32_t path) const;

  // Host ports (links with a host at one end): the first links of the numbering above.
  uint32_t NumHostPorts() const {
    return config_.kind == TopologyKind::kLeafSpine ? 2 * hosts_ : static_cast<uint32_t>(capacity_.size());
  }
  // Bytes per second of one host link (link_gbps), the unit of `load`.
  double HostLinkCapacity() const { return host_link_; }
  // A link's name for rendering: "up3", "down3", "up3.p1", "tor2-spine1", "link".
  std::string LinkName(uint32_t link) const;

 private:
  TopologyConfig config_;
  uint32_t hosts_;
  double host_link_;
  std::vector<double> capacity_;
};

}  // namespace dcgym::flow
