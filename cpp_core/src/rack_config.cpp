#include "dcgym/rack/config.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace dcgym::rack {
namespace {

[[noreturn]] void Fail(const std::string& field, const std::string& what) {
  throw std::invalid_argument(field + ": " + what);
}

template <typename T>
std::string Str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

constexpr uint32_t kMaxNodes = 1u << 20;
constexpr uint32_t kMaxWorkers = 1u << 16;

}  // namespace

uint32_t RackConfig::NumNodes() const {
  uint64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return static_cast<uint32_t>(n);
}

double RackConfig::Capacity() const {
  double c = 0;
  for (const auto& g : groups) c += g.count * g.workers * g.speed;
  return c;
}

void RackConfig::Validate() const {
  if (groups.empty()) Fail("nodes", "needs at least one node group");
  uint64_t total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const std::string f = "nodes[" + std::to_string(i) + "]";
    if (g.count < 1) Fail(f + ".count", "must be >= 1, got " + Str(g.count));
    if (g.workers < 1 || g.workers > kMaxWorkers)
      Fail(f + ".workers", "must be in [1, " + Str(kMaxWorkers) + "], got " + Str(g.workers));
    if (!(g.speed > 0) || !std::isfinite(g.speed))
      Fail(f + ".speed", "must be a positive finite number, got " + Str(g.speed));
    if (g.queue_capacity < -1)
      Fail(f + ".queue_capacity", "must be >= 0 or -1 (unbounded), got " + Str(g.queue_capacity));
    total += g.count;
  }
  if (total > kMaxNodes) Fail("nodes", "at most " + Str(kMaxNodes) + " nodes, got " + Str(total));
  if (!(load > 0) || !std::isfinite(load) || load > 10)
    Fail("load", "must be in (0, 10], got " + Str(load));
  if (!(service.Mean() > 0)) Fail("service", "mean must be positive");
  if (!(intra.quantum_us >= 0) || !std::isfinite(intra.quantum_us))
    Fail("intra_node.quantum_us", "must be >= 0, got " + Str(intra.quantum_us));
  if (!(intra.switch_cost_us >= 0) || !std::isfinite(intra.switch_cost_us))
    Fail("intra_node.switch_cost_us", "must be >= 0, got " + Str(intra.switch_cost_us));
  if (intra.discipline == Discipline::kFcfs && (intra.quantum_us > 0 || intra.switch_cost_us > 0))
    Fail("intra_node.quantum_us", "applies to discipline 'ps' only");
  if (intra.quantum_us == 0 && intra.switch_cost_us > 0)
    Fail("intra_node.switch_cost_us", "needs a quantum_us > 0");
  if (dispatch.kind == DispatchKind::kPowerOfD) {
    if (dispatch.d < 1 || dispatch.d > 64) Fail("dispatch.d", "must be in [1, 64], got " + Str(dispatch.d));
    if (!dispatch.replace && dispatch.d > total)
      Fail("dispatch.d", "without replacement must be <= the number of nodes (" + Str(total) +
                             "), got " + Str(dispatch.d));
  }
  if (!(dispatch.rtt_us >= 0) || !std::isfinite(dispatch.rtt_us))
    Fail("dispatch.rtt_us", "must be >= 0, got " + Str(dispatch.rtt_us));
  if (dispatch.kind != DispatchKind::kCentralFcfs && dispatch.rtt_us > 0)
    Fail("dispatch.rtt_us", "applies to policy 'central_fcfs' only");
  if (dispatch.kind == DispatchKind::kCentralFcfs && intra.discipline != Discipline::kFcfs)
    Fail("intra_node.discipline", "policy 'central_fcfs' serves one global FCFS queue; use 'fcfs'");
}

}  // namespace dcgym::rack
