#include "dcgym/flow/arrivals.hpp"

#include <algorithm>
#include <limits>

namespace dcgym::flow {

using kernel::MakeRng;
using kernel::Stream;

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}  // namespace

kernel::Distribution MakeSizes(const SizeConfig& sizes, const std::string& field) {
  if (sizes.name == "cdf") return kernel::Distribution::Empirical(sizes.cdf, field);
  return kernel::Distribution::Empirical(NamedCdf(sizes.name, field), field);
}

Arrivals::Arrivals(const FlowConfig& config, const Topology& topology)
    : topology_(topology),
      changes_(config.dynamics),
      trace_(config.trace),
      time_rng_(MakeRng(config.seed, Stream::kArrivals)),
      size_rng_(MakeRng(config.seed, Stream::kService)),
      endpoint_rng_(MakeRng(config.seed, Stream::kDispatch)),
      path_rng_(MakeRng(config.seed, Stream::kNetwork)) {
  uint32_t first = 0;
  for (size_t g = 0; g < config.groups.size(); ++g) {
    const GroupConfig& c = config.groups[g];
    const uint32_t count = c.hosts == 0 ? topology.NumHosts() : c.hosts;
    const std::string field = "workload.groups[" + std::to_string(g) + "].sizes";
    groups_.push_back(Group{first, count, MakeSizes(c.sizes, field), c.sizes.name, c.load});
    first += count;
  }
  const uint32_t n = topology.NumHosts();
  if (!config.traffic_matrix.empty()) {
    matrix_cumulative_.resize(size_t{n} * n);
    for (uint32_t i = 0; i < n; ++i) {
      double total = 0;
      for (uint32_t j = 0; j < n; ++j) matrix_cumulative_[size_t{i} * n + j] = total += config.traffic_matrix[i][j];
    }
  }
  next_change_time_ = changes_.empty() ? kInfinity : changes_[0].time_s;
  ComputeRates();
  if (!trace_.empty()) {
    next_time_ = trace_[0].time_s;
  } else {
    next_time_ = total_rate_ > 0 ? time_rng_.Exp1() / total_rate_ : kInfinity;
  }
}

void Arrivals::ComputeRates() {
  cumulative_.clear();
  total_rate_ = 0;
  const bool single = topology_.Kind() == TopologyKind::kSingleLink;
  for (Group& g : groups_) {
    const double offered = g.load * topology_.HostLinkCapacity() * (single ? 1.0 : g.count);  // bytes/s
    g.rate = offered / g.sizes.Mean();
    cumulative_.push_back(total_rate_ += g.rate);
  }
}

void Arrivals::ApplyChanges() {
  const double now = NextChangeTime();
  while (next_change_ < changes_.size() && changes_[next_change_].time_s == now) {
    const ChangeConfig& c = changes_[next_change_];
    const std::string field = "workload.dynamics[" + std::to_string(next_change_) + "].sizes";
    for (uint32_t g = 0; g < groups_.size(); ++g) {
      if (c.group != -1 && static_cast<uint32_t>(c.group) != g) continue;
      if (c.load) groups_[g].load = *c.load;
      if (c.change_sizes) {
        groups_[g].sizes = MakeSizes(c.sizes, field);
        groups_[g].sizes_name = c.sizes.name;
      }
    }
    ++next_change_;
  }
  next_change_time_ = next_change_ < changes_.size() ? changes_[next_change_].time_s : kInfinity;
  ComputeRates();
  next_time_ = total_rate_ > 0 ? now + time_rng_.Exp1() / total_rate_ : kInfinity;
}

uint32_t Arrivals::GroupOf(uint32_t host) const {
  for (uint32_t g = 0; g < groups_.size(); ++g)
    if (host < groups_[g].first + groups_[g].count) return g;
  return static_cast<uint32_t>(groups_.size()) - 1;
}

uint32_t Arrivals::PickDestination(uint32_t src) {
  const uint32_t n = topology_.NumHosts();
  if (topology_.Kind() == TopologyKind::kSingleLink) return topology_.Receiver();
  if (matrix_cumulative_.empty()) {
    const uint32_t d = endpoint_rng_.Below(n - 1);
    return d >= src ? d + 1 : d;
  }
  const double* row = &matrix_cumulative_[size_t{src} * n];
  const double u = endpoint_rng_.Uniform() * row[n - 1];
  // The first destination whose cumulative weight exceeds u (zero weights are never picked).
  return static_cast<uint32_t>(std::upper_bound(row, row + n, u) - row);
}

Arrival Arrivals::Pop() {
  Arrival a;
  a.time = next_time_;
  if (!trace_.empty()) {
    const TraceFlow& t = trace_[next_trace_++];
    a.src = t.src;
    a.dst = topology_.Kind() == TopologyKind::kSingleLink ? topology_.Receiver() : t.dst;
    a.size = t.size_bytes;
    a.group = GroupOf(t.src);
    a.priority = t.priority;
    a.cap = t.cap_gbps == kNoCap ? kNoCap : BytesPerSecond(t.cap_gbps);
    const uint32_t paths = topology_.NumPaths(a.src, a.dst);
    a.path = t.path >= 0 ? static_cast<uint32_t>(t.path) : (paths > 1 ? path_rng_.Below(paths) : 0);
    next_time_ = next_trace_ < trace_.size() ? trace_[next_trace_].time_s : kInfinity;
    return a;
  }
  const double u = endpoint_rng_.Uniform() * total_rate_;
  uint32_t g = 0;
  while (g + 1 < groups_.size() && !(u < cumulative_[g])) ++g;
  Group& group = groups_[g];
  a.group = g;
  a.src = group.first + (group.count > 1 ? endpoint_rng_.Below(group.count) : 0);
  a.dst = PickDestination(a.src);
  a.size = std::max(1.0, group.sizes.Draw(size_rng_).value);
  const uint32_t paths = topology_.NumPaths(a.src, a.dst);
  a.path = paths > 1 ? path_rng_.Below(paths) : 0;
  next_time_ += time_rng_.Exp1() / total_rate_;
  return a;
}

}  // namespace dcgym::flow
