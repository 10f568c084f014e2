// One node's probability update (SortProbabilities, fused.hpp), timed the way
// benchmarks/policy_runtime.cpp times it, the kernel alone: for
// comparing versions of the runtime headers with benchmarks/fused_ab.sh, which
// builds this file against each version and alternates the builds.
//
//   fused_ab N    prints the best ns per call over 60 trials at N nodes
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "dcgym/runtime/learner.hpp"

namespace {
double ThreadNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace dcgym::runtime;
  const long n = argc > 1 ? std::atol(argv[1]) : 32;
  if (n < 1 || n > 64) {
    std::fprintf(stderr, "fused_ab: N must be in [1, 64], got %ld\n", n);
    return 2;
  }
  const std::size_t nodes = static_cast<std::size_t>(n), rows = 20;  // rows: D states, as policy_runtime
  const std::size_t f = 2 * nodes + 1, s = PackedWidth(2 * nodes);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> weight(-0.3f, 0.3f), load(0.0f, 3.0f);
  AlignedVector<float> w(f * s), z(rows * s);
  for (auto& v : w) v = weight(rng);
  std::vector<float> table(nodes), x(rows * nodes), phi(rows * f);
  RankFeatureTable(nodes, table.data());
  for (auto& v : x) v = load(rng);
  if (!SortProbabilities(x.data(), nodes, table.data(), w.data(), phi.data(), z.data())) {
    std::fprintf(stderr, "fused_ab: the fused kernel does not run here (no AVX-512?)\n");
    return 2;
  }
  volatile float sink = 0;
  std::size_t row = 0;
  double best = 1e300;
  const int calls = 50000;
  for (int trial = 0; trial < 60; ++trial) {
    const double t0 = ThreadNs();
    for (int c = 0; c < calls; ++c) {
      row = row + 1 == rows ? 0 : row + 1;
      SortProbabilities(x.data() + row * nodes, nodes, table.data(), w.data(), phi.data() + row * f,
                        z.data() + row * s);
      sink = z[row * s];
    }
    best = std::min(best, (ThreadNs() - t0) / calls);
  }
  (void)sink;
  std::printf("%.2f\n", best);
  return 0;
}
