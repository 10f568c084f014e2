// Deploying an exported Malcolm policy without Python or the engine: load a
// policy file, then dispatch a stream of requests with it.
//
//   c++ -std=c++17 -O2 -I cpp_core/include cpp_core/examples/deploy_dispatch.cpp -o deploy_dispatch
//   python -m dcgym.export runs/<run>/ --out malcolm.dcpol    (or --demo-file malcolm.dcpol)
//   ./deploy_dispatch malcolm.dcpol [requests]
//
// Each request arrives at a random node, which draws its destination from
// its migration probabilities (Probabilities() on the loads it sees, in the
// engine's unit: expected wait in microseconds) with a small xorshift RNG;
// a `fill` file (water-filling with gains) gives them by Tables() on the
// loads' levels and the rack's arrivals per heartbeat at 90% load. The toy
// asks at every request, as a per-task file means to be asked (a file
// without per_task means its tables to be held for a heartbeat).
// The simulated loads are a toy: a request adds one mean service time to its
// destination's backlog, which every node drains at its own speed between
// requests. A bad policy file exits with status 1 and the loader's message.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dcgym/runtime/policy_file.hpp>
#include <string>
#include <vector>

namespace {

/// xorshift64*: a small, fast, seedable generator (Vigna 2016).
struct XorShift {
  std::uint64_t state;
  std::uint64_t Next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  }
  /// Uniform in [0, 1).
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
};

/// The index drawn from probabilities p[0 .. n) by inverse transform of u.
std::size_t Draw(const float* p, std::size_t n, float u) {
  float cumulative = 0.0f;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    cumulative += p[i];
    if (u < cumulative) return i;
  }
  return n - 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s POLICY_FILE [REQUESTS]\n", argv[0]);
    return 2;
  }
  const long requests = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 100000;
  if (requests < 1) {
    std::fprintf(stderr, "error: REQUESTS: got %s; expected an integer >= 1\n", argv[2]);
    return 2;
  }

  dcgym::runtime::Policy policy;
  std::string error;
  if (!dcgym::runtime::LoadPolicyFile(argv[1], &policy, &error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  dcgym::runtime::LinearPairPolicy* pair = policy.linear_pair();
  dcgym::runtime::FillPolicy* fill = policy.fill();
  if (pair == nullptr && fill == nullptr) {
    std::fprintf(stderr, "error: %s holds a %s policy; this example dispatches with linear_pair or fill (Malcolm's)\n",
                 argv[1], std::string(dcgym::runtime::PolicyKindName(policy.kind())).c_str());
    return 1;
  }

  // A toy rack at 90% load: between two requests node i drains its share
  // (speed i % 3 + 1 of the total) of 1 / 0.9 mean service times of backlog.
  const std::size_t n = pair ? pair->num_nodes() : fill->num_nodes();
  const float service_us = 75.0f;
  std::vector<float> loads(n, 0.0f), drain(n), migration(n), stealing(n);
  float capacity = 0.0f;
  for (std::size_t i = 0; i < n; ++i) capacity += static_cast<float>(i % 3 + 1);
  for (std::size_t i = 0; i < n; ++i) drain[i] = service_us * static_cast<float>(i % 3 + 1) / (0.9f * capacity);
  std::vector<long> sent(n, 0), arrived(n, 0);
  long migrated = 0;
  double max_load = 0.0;
  XorShift rng{0x9E3779B97F4A7C15ULL};
  std::vector<double> raw(n), levels(n), table_m(n), table_s(n);  // the fill kind works in double
  double fill_arrivals = 0.0;                                     // the rack's arrivals per heartbeat at 90% load
  if (fill) {
    for (float c : fill->capacity()) fill_arrivals += 0.9 * c * fill->heartbeat_services();
  }

  const auto start = std::chrono::steady_clock::now();
  for (long r = 0; r < requests; ++r) {
    const std::size_t entry = static_cast<std::size_t>(rng.Next() % n);
    if (pair) {
      pair->Probabilities(entry, loads.data(), migration.data(), stealing.data());
    } else {
      for (std::size_t i = 0; i < n; ++i) raw[i] = loads[i];
      fill->Levels(raw.data(), levels.data());
      fill->Tables(entry, levels.data(), fill_arrivals, table_m.data(), table_s.data());
      for (std::size_t i = 0; i < n; ++i) migration[i] = static_cast<float>(table_m[i]);
    }
    const std::size_t destination = Draw(migration.data(), n, rng.Uniform());
    ++arrived[entry];
    ++sent[destination];
    migrated += destination != entry;
    loads[destination] += service_us;
    for (std::size_t i = 0; i < n; ++i) {
      loads[i] = loads[i] > drain[i] ? loads[i] - drain[i] : 0.0f;
      max_load = loads[i] > max_load ? loads[i] : max_load;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (pair) {
    std::printf("policy %s: linear_pair, %zu nodes, actor basis %s (%zu features), %s\n", argv[1], n,
                std::string(dcgym::runtime::BasisName(pair->actor_basis())).c_str(), pair->num_features(),
                pair->has_critic() ? "with critic" : "no critic");
  } else {
    std::printf("policy %s: fill, %zu nodes, horizon %g, mix %g, %s, %s\n", argv[1], n, fill->horizon(), fill->mix(),
                fill->steal() ? "steal rule" : "no steals", fill->per_task() ? "per task" : "per heartbeat");
  }
  std::printf("%ld requests, %.1f%% migrated, %.0f ns per decision, max backlog %.0f us\n", requests,
              100.0 * static_cast<double>(migrated) / static_cast<double>(requests),
              1e9 * seconds / static_cast<double>(requests), max_load);
  std::printf("node  speed  arrived  served  backlog_us\n");
  for (std::size_t i = 0; i < n; ++i) {
    std::printf("%4zu  %5zu  %7ld  %6ld  %10.1f\n", i, i % 3 + 1, arrived[i], sent[i], loads[i]);
  }
  return 0;
}
