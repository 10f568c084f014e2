#include "dcgym/flow/topology.hpp"

#include <string>

namespace dcgym::flow {

uint64_t NumLinks(const TopologyConfig& config) {
  const uint64_t hosts =
      config.kind == TopologyKind::kLeafSpine ? uint64_t{config.racks} * config.hosts_per_rack : uint64_t{config.hosts};
  switch (config.kind) {
    case TopologyKind::kSingleLink: return 1;
    case TopologyKind::kBigSwitch: return 2 * hosts;
    case TopologyKind::kPlanes: return 2 * hosts * config.planes;
    case TopologyKind::kLeafSpine: return 2 * hosts + 2 * uint64_t{config.racks} * config.spines;
  }
  return 0;
}

Topology::Topology(const TopologyConfig& config) : config_(config) {
  const double c = BytesPerSecond(config.link_gbps);
  switch (config.kind) {
    case TopologyKind::kSingleLink:
      hosts_ = config.hosts;
      host_link_ = c;
      capacity_.assign(1, c);
      break;
    case TopologyKind::kBigSwitch:
      hosts_ = config.hosts;
      host_link_ = c;
      capacity_.assign(2 * size_t{hosts_}, c);
      break;
    case TopologyKind::kPlanes:
      hosts_ = config.hosts;
      host_link_ = c;
      capacity_.assign(2 * size_t{hosts_} * config.planes, c);
      break;
    case TopologyKind::kLeafSpine: {
      hosts_ = config.racks * config.hosts_per_rack;
      host_link_ = c;
      const double fabric = c * config.hosts_per_rack / (config.spines * config.oversubscription);
      capacity_.assign(2 * size_t{hosts_}, c);
      capacity_.resize(capacity_.size() + 2 * size_t{config.racks} * config.spines, fabric);
      break;
    }
  }
}

uint32_t Topology::NumPaths(uint32_t src, uint32_t dst) const {
  switch (config_.kind) {
    case TopologyKind::kPlanes: return config_.planes;
    case TopologyKind::kLeafSpine:
      return src / config_.hosts_per_rack == dst / config_.hosts_per_rack ? 1 : config_.spines;
    default: return 1;
  }
}

uint32_t Topology::MaxPaths() const {
  switch (config_.kind) {
    case TopologyKind::kPlanes: return config_.planes;
    case TopologyKind::kLeafSpine: return config_.racks > 1 ? config_.spines : 1;
    default: return 1;
  }
}

Path Topology::Route(uint32_t src, uint32_t dst, uint32_t path) const {
  Path p;
  const uint32_t n = hosts_;
  switch (config_.kind) {
    case TopologyKind::kSingleLink: p.link[p.hops++] = 0; break;
    case TopologyKind::kBigSwitch:
      p.link[p.hops++] = src;
      p.link[p.hops++] = n + dst;
      break;
    case TopologyKind::kPlanes:
      p.link[p.hops++] = 2 * n * path + src;
      p.link[p.hops++] = 2 * n * path + n + dst;
      break;
    case TopologyKind::kLeafSpine: {
      const uint32_t k = config_.hosts_per_rack, s = config_.spines, r = config_.racks;
      const uint32_t rs = src / k, rd = dst / k;
      p.link[p.hops++] = src;
      if (rs != rd) {
        p.link[p.hops++] = 2 * n + rs * s + path;
        p.link[p.hops++] = 2 * n + r * s + path * r + rd;
      }
      p.link[p.hops++] = n + dst;
      break;
    }
  }
  return p;
}

std::string Topology::LinkName(uint32_t link) const {
  const uint32_t n = hosts_;
  switch (config_.kind) {
    case TopologyKind::kSingleLink: return "link";
    case TopologyKind::kBigSwitch: return link < n ? "up" + std::to_string(link) : "down" + std::to_string(link - n);
    case TopologyKind::kPlanes: {
      const uint32_t plane = link / (2 * n), i = link % (2 * n);
      return (i < n ? "up" + std::to_string(i) : "down" + std::to_string(i - n)) + ".p" + std::to_string(plane);
    }
    case TopologyKind::kLeafSpine: {
      const uint32_t s = config_.spines, r = config_.racks;
      if (link < n) return "up" + std::to_string(link);
      if (link < 2 * n) return "down" + std::to_string(link - n);
      const uint32_t i = link - 2 * n;
      if (i < r * s) return "tor" + std::to_string(i / s) + "-spine" + std::to_string(i % s);
      const uint32_t j = i - r * s;
      return "spine" + std::to_string(j / r) + "-tor" + std::to_string(j % r);
    }
  }
  return "";
}

}  // namespace dcgym::flow
