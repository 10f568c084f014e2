// The C++ timings of benchmarks/policy_runtime.py: one node's probability update and parameter update of
// Malcolm's learner (dcgym/runtime/learner.hpp) at N nodes, single thread, without Python. `make
// policy-runtime` builds it as the extension is built (-O3); the script runs it.
//
//   policy_runtime N REPETITIONS [paper|code] [SEED]
//
// prints one JSON object: ns per call of the probability update (basis + both actors + softmax), of one pass
// over the node's packed actor weights (the floor under a probability update), of the parameter update
// (mini-batch gradient + AdamW; "cached" reuses the acting-time features and policies as the controller
// does) and of AdamW alone, with the learner's size. Random loads and counts, the default bases, mini-batches
// of the learner's default D.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "dcgym/runtime/learner.hpp"

namespace {

using namespace dcgym::runtime;

// CPU time of this thread (time while preempted does not count), in ns.
double ThreadNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// The best of 25 trials of reps / 25 calls: the machine may be shared, and a trial that was disturbed (caches
// flushed by another job, interrupts) says nothing about the code.
template <typename Body>
double NsPer(Body&& body, int64_t reps) {
  body();  // warm caches
  const int64_t per = std::max<int64_t>(1, reps / 25);
  double best = 1e300;
  for (int trial = 0; trial < 25; ++trial) {
    const double t0 = ThreadNs();
    for (int64_t r = 0; r < per; ++r) body();
    best = std::min(best, (ThreadNs() - t0) / static_cast<double>(per));
  }
  return best;
}

int Usage(const char* why) {
  std::fprintf(stderr, "policy_runtime: %s\nusage: policy_runtime N REPETITIONS [paper|code] [SEED]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) return Usage("needs N and REPETITIONS");
  const long n_arg = std::atol(argv[1]), reps_arg = std::atol(argv[2]);
  if (n_arg < 1 || reps_arg < 1) return Usage("N and REPETITIONS must be >= 1");
  LearnerConfig cfg;
  if (argc > 3) {
    if (std::strcmp(argv[3], "code") == 0) {
      cfg.variant = Variant::kCode;
    } else if (std::strcmp(argv[3], "paper") != 0) {
      return Usage("the variant is paper or code");
    }
  }
  const uint64_t seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
  const size_t n = static_cast<size_t>(n_arg);
  const int64_t repetitions = reps_arg;

  try {
    MalcolmLearner l(n, cfg);
    l.InitUniform(seed);
    const size_t d = cfg.minibatch_size, fa = l.ActorFeatures(), sw = l.ActorWidth();
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> load(0.0f, 3.0f);
    std::uniform_int_distribution<int> count(0, 3);
    std::vector<float> states((d + 1) * n), mg(d * n), st(d * n), phi(d * fa);
    AlignedVector<float> pi(d * sw);
    std::vector<double> rewards(d);
    for (auto& v : states) v = load(rng);
    for (auto& v : mg) v = static_cast<float>(count(rng));
    for (auto& v : st) v = static_cast<float>(count(rng) == 0);
    for (auto& r : rewards) r = -10.0 * load(rng);
    ActorPolicy policy(n, cfg.actor_basis);
    const auto& node = l.At(0);

    size_t row = 0;
    volatile float sink = 0;
    const double prob = NsPer(
        [&] {
          row = row + 1 == d ? 0 : row + 1;  // no division in the timed loop
          policy.Probabilities(states.data() + row * n, node.actor.data(), phi.data() + row * fa, pi.data() + row * sw);
          sink = pi[row * sw];
        },
        repetitions * 20);
    // The floor under a probability update: one pass over the node's packed actor weights (the only data larger
    // than a few cache lines), summed in 8 independent 16-lane chains and nothing else.
    const float* w = node.actor.data();
    const size_t nw = l.ActorFeatures() * l.ActorWidth();
    const double read = NsPer([&] { sink = StreamSum(w, nw); }, repetitions * 20);
    (void)sink;
    Batch b;
    b.d = d;
    b.x = states.data();
    b.next_x = states.data() + n;
    b.reward = rewards.data();
    b.migrate = mg.data();
    b.steal = st.data();
    const double full = NsPer([&] { l.Update(0, b); }, repetitions);
    for (size_t t = 0; t < d; ++t)
      policy.Probabilities(states.data() + t * n, node.actor.data(), phi.data() + t * fa, pi.data() + t * sw);
    b.phi_a = phi.data();
    b.pi = pi.data();
    const double cached = NsPer([&] { l.Update(0, b); }, repetitions);
    const double adamw = NsPer([&] { l.ApplyGradients(0); }, repetitions);

    std::printf(
        "{\"probability_update_ns\": %.6g, \"weights_read_ns\": %.6g, \"parameter_update_ns\": %.6g, "
        "\"parameter_update_cached_ns\": %.6g, \"adamw_ns\": %.6g, \"num_parameters\": %zu, \"minibatch_size\": %zu}\n",
        prob, read, full, cached, adamw, l.CriticFeatures() + 2 * n * fa, d);
  } catch (const std::invalid_argument& e) {
    return Usage(e.what());
  }
  return 0;
}
