// Fuzz harness of the policy file loader (dcgym/runtime/policy_file.hpp),
// meant to run under AddressSanitizer + UBSan (`make asan-fuzz` at the
// repository root).
//
//   fuzz_policy_file [ITERATIONS] [POLICY_FILE ...]
//
// Seeds: one valid file of each kind written here (linear_pair with a
// critic, mlp with a bounded head and two networks, mlp with each of format
// version 2's heads, linear_value, and a version-3 mlp with a settings
// section, a version-4 fill policy, a version-5 row-wise mlp and a version-6
// per-task fill policy) plus any
// files given. Every iteration mutates a seed (bit flips, random bytes,
// interesting 32-bit values at aligned offsets, truncation, appended bytes),
// and half the time repairs body_size and the checksum so the mutation
// reaches the field checks behind them. Each input must either load, and
// then evaluate on random inputs, or be refused with a message; the
// sanitizers catch any out-of-bounds read or undefined behaviour. Exits
// non-zero if a seed fails to load or a refusal has no message.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dcgym/runtime/policy_file.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace rt = dcgym::runtime;
using Bytes = std::vector<unsigned char>;

namespace {

struct Rng {
  std::uint64_t s;
  std::uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  std::size_t Below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(Next() % n); }
  float Uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(Next() >> 40) / 16777216.0f; }
};

void PutU32(Bytes& b, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) b.push_back(static_cast<unsigned char>(v >> (8 * k)));
}
void PutF32(Bytes& b, float f) {
  std::uint32_t v;
  std::memcpy(&v, &f, 4);
  PutU32(b, v);
}
void SetU32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + k] = static_cast<unsigned char>(v >> (8 * k));
}

/// Header + body + CRC32, as the Python writer makes them.
Bytes Finish(std::uint32_t kind, std::uint32_t agents, const Bytes& body, std::uint32_t version = 2) {
  Bytes f(rt::kPolicyMagic, rt::kPolicyMagic + 8);
  PutU32(f, version);
  PutU32(f, kind);
  PutU32(f, agents);
  PutU32(f, 0);
  const std::uint64_t size = body.size();
  PutU32(f, static_cast<std::uint32_t>(size));
  PutU32(f, static_cast<std::uint32_t>(size >> 32));
  f.insert(f.end(), body.begin(), body.end());
  PutU32(f, rt::Crc32(f.data(), f.size()));
  return f;
}

/// Make body_size and the checksum agree with the bytes again (when there is room for them).
void Repair(Bytes& f) {
  if (f.size() < rt::kHeaderSize + rt::kChecksumSize) return;
  const std::uint64_t body = f.size() - rt::kHeaderSize - rt::kChecksumSize;
  SetU32(f, 24, static_cast<std::uint32_t>(body));
  SetU32(f, 28, static_cast<std::uint32_t>(body >> 32));
  SetU32(f, f.size() - 4, rt::Crc32(f.data(), f.size() - 4));
}

void PutInput(Bytes& b, std::uint32_t n, rt::Basis basis) {
  PutU32(b, n);
  PutU32(b, static_cast<std::uint32_t>(basis));
  for (float v : {0.1f / 75.0f, 0.0f, 0.0f, 10.0f}) PutF32(b, v);
}

std::vector<Bytes> Seeds(Rng& rng) {
  std::vector<Bytes> seeds;
  {  // linear_pair, 3 nodes, sort actors, customized critic
    const std::uint32_t n = 3;
    Bytes b;
    PutInput(b, n, rt::Basis::kSort);
    PutU32(b, static_cast<std::uint32_t>(rt::Basis::kCustomized));
    PutF32(b, 10.0f);
    const std::size_t fa = rt::NumFeatures(rt::Basis::kSort, n), fc = rt::NumFeatures(rt::Basis::kCustomized, n);
    for (std::uint32_t node = 0; node < n; ++node) {
      for (std::size_t i = 0; i < 2 * n * fa + fc; ++i) PutF32(b, rng.Uniform(-1, 1));
    }
    seeds.push_back(Finish(1, n, b));
  }
  {  // mlp: 3 agents on 2 networks, 4 inputs -> 5 (tanh) -> 2, tanh head with bounds
    Bytes b;
    for (std::uint32_t v : {4u, 2u, static_cast<std::uint32_t>(rt::Head::kTanh), 2u}) PutU32(b, v);
    for (std::uint32_t v : {0u, 1u, 1u}) PutU32(b, v);
    for (float v : {-1.0f, 0.0f, 1.0f, 5.0f}) PutF32(b, v);  // low, high
    for (int net = 0; net < 2; ++net) {
      PutU32(b, 2);
      const std::uint32_t shapes[2][3] = {{4, 5, 2}, {5, 2, 0}};  // in, out, activation
      for (const auto& s : shapes) {
        for (std::uint32_t v : s) PutU32(b, v);
        for (std::uint32_t i = 0; i < s[0] * s[1] + s[1]; ++i) PutF32(b, rng.Uniform(-1, 1));
      }
    }
    seeds.push_back(Finish(2, 3, b));
  }
  for (const rt::Head head : {rt::Head::kIncreasing, rt::Head::kMultiCategorical}) {  // format version 2's heads
    Bytes b;  // one agent, 4 inputs -> 5 (relu) -> 5 (tanh)
    for (std::uint32_t v : {4u, 1u, static_cast<std::uint32_t>(head), 5u, 0u}) PutU32(b, v);
    if (head == rt::Head::kIncreasing) {
      for (int i = 0; i < 5; ++i) PutF32(b, 1460.0f);
      for (int i = 0; i < 5; ++i) PutF32(b, 1460.0f * 65536.0f);
    } else {
      for (std::uint32_t v : {2u, 2u, 3u}) PutU32(b, v);  // two groups, of 2 and 3 choices
    }
    PutU32(b, 2);
    const std::uint32_t shapes[2][3] = {{4, 5, 1}, {5, 5, 2}};  // in, out, activation
    for (const auto& s : shapes) {
      for (std::uint32_t v : s) PutU32(b, v);
      for (std::uint32_t i = 0; i < s[0] * s[1] + s[1]; ++i) PutF32(b, rng.Uniform(-1, 1));
    }
    seeds.push_back(Finish(2, 1, b));
  }
  {  // version 3: the settings section, then an mlp (one agent, 3 inputs -> 6, identity head)
    const std::string text = "family=lb\ndispatch=sed\n";
    Bytes b;
    PutU32(b, static_cast<std::uint32_t>(text.size()));
    b.insert(b.end(), text.begin(), text.end());
    for (std::uint32_t v : {3u, 1u, static_cast<std::uint32_t>(rt::Head::kIdentity), 6u, 0u}) PutU32(b, v);
    PutU32(b, 1);
    for (std::uint32_t v : {3u, 6u, 0u}) PutU32(b, v);
    for (std::uint32_t i = 0; i < 3 * 6 + 6; ++i) PutF32(b, rng.Uniform(-1, 1));
    seeds.push_back(Finish(2, 1, b, rt::kSettingsVersion));
  }
  {  // version 5: a row-wise mlp, 3 rows of 2 features and 1 shared (7 inputs), 3 -> 4 (relu) -> 5 per row,
     // multi_categorical over groups of 2 and 3 per row
    const std::string text = "env=flow_v0\n";
    Bytes b;
    PutU32(b, static_cast<std::uint32_t>(text.size()));
    b.insert(b.end(), text.begin(), text.end());
    for (std::uint32_t v : {7u, 1u, static_cast<std::uint32_t>(rt::Head::kMultiCategorical), 15u, 3u, 2u, 0u}) {
      PutU32(b, v);  // inputs, networks, head, outputs, rows, row width, agent 0's network
    }
    PutU32(b, 6);
    for (int row = 0; row < 3; ++row) {
      for (std::uint32_t v : {2u, 3u}) PutU32(b, v);
    }
    PutU32(b, 2);
    const std::uint32_t shapes[2][3] = {{3, 4, 1}, {4, 5, 0}};  // in, out, activation
    for (const auto& s : shapes) {
      for (std::uint32_t v : s) PutU32(b, v);
      for (std::uint32_t i = 0; i < s[0] * s[1] + s[1]; ++i) PutF32(b, rng.Uniform(-1, 1));
    }
    seeds.push_back(Finish(2, 1, b, rt::kRowsVersion));
  }
  {  // linear_value, 2 agents, 4 loads, quadratic
    Bytes b;
    PutInput(b, 4, rt::Basis::kQuadratic);
    for (std::size_t i = 0; i < 2 * rt::NumFeatures(rt::Basis::kQuadratic, 4); ++i) PutF32(b, rng.Uniform(-1, 1));
    seeds.push_back(Finish(3, 2, b));
  }
  for (const std::uint32_t rules : {1u, 3u}) {  // version 4: settings, then fill (3 nodes, the steal rule on,
    // gains around 0); version 6: the same per task
    const std::string text = "env=rack_v0\nheartbeat_us=100\n";
    const std::uint32_t n = 3;
    Bytes b;
    PutU32(b, static_cast<std::uint32_t>(text.size()));
    b.insert(b.end(), text.begin(), text.end());
    PutU32(b, n);
    for (float v : {1.0f / 75.0f, 100.0f / 75.0f, 2.0f, 0.1f}) PutF32(b, v);  // level_scale .. mix
    PutU32(b, rules);
    for (float c : {1.0f, 2.0f, 4.0f}) PutF32(b, c);
    for (std::size_t i = 0; i < n * rt::FillRows(n) * rt::kFillFeatures; ++i) PutF32(b, rng.Uniform(-0.5f, 0.5f));
    seeds.push_back(Finish(4, n, b, rules == 3 ? rt::kPerTaskVersion : rt::kFillVersion));
  }
  return seeds;
}

void Mutate(Bytes& f, Rng& rng) {
  static const std::uint32_t kInteresting[] = {0u,
                                               1u,
                                               2u,
                                               3u,
                                               4u,
                                               5u,
                                               0x7Fu,
                                               0xFFu,
                                               0x10000u,
                                               0x10001u,
                                               0x1000000u,
                                               0x1000001u,
                                               0x7FFFFFFFu,
                                               0x80000000u,
                                               0xFFFFFFFFu,
                                               0x7FC00000u /* NaN */,
                                               0x7F800000u /* inf */,
                                               0x7F61B1E6u /* 3e38: finite, beyond kMaxParameter */,
                                               0x0A3D3D0Au /* "\n==\n" */};
  const std::size_t count = 1 + rng.Below(4);
  for (std::size_t m = 0; m < count; ++m) {
    switch (rng.Below(6)) {
      case 0:
        if (!f.empty()) f[rng.Below(f.size())] ^= static_cast<unsigned char>(1u << rng.Below(8));
        break;
      case 1:
        if (!f.empty()) f[rng.Below(f.size())] = static_cast<unsigned char>(rng.Next());
        break;
      case 2:
      case 3:
        if (f.size() >= 4) {
          const std::size_t at = rng.Below(f.size() / 4) * 4;
          SetU32(f, at, kInteresting[rng.Below(sizeof kInteresting / sizeof kInteresting[0])]);
        }
        break;
      case 4: f.resize(rng.Below(f.size() + 1)); break;
      case 5:
        for (std::size_t k = rng.Below(64); k > 0; --k) f.push_back(static_cast<unsigned char>(rng.Next()));
        break;
    }
  }
  if (rng.Below(2) == 0) Repair(f);
}

/// Evaluate a loaded policy on random inputs with every agent.
void Exercise(rt::Policy& policy, Rng& rng) {
  for (const auto& [key, value] : policy.settings()) {
    if (key.empty() || value.empty() || policy.setting(key) == nullptr) std::abort();
  }
  std::vector<float> in, a, b;
  if (auto* p = policy.linear_pair()) {
    const std::size_t n = p->num_nodes();
    in.resize(n);
    a.resize(n);
    b.resize(n);
    for (std::size_t node = 0; node < n && node < 8; ++node) {
      for (auto& x : in) x = rng.Uniform(0, 2000);
      p->Probabilities(node, in.data(), a.data(), b.data());
      (void)p->Value(node, in.data());
    }
  } else if (auto* m = policy.mlp()) {
    in.resize(m->num_inputs());
    a.resize(m->num_outputs());
    for (std::size_t agent = 0; agent < m->num_agents() && agent < 8; ++agent) {
      for (auto& x : in) x = rng.Uniform(-5, 5);
      const std::int64_t action = m->Act(agent, in.data(), a.data());
      if (action >= static_cast<std::int64_t>(a.size())) std::abort();
      std::vector<std::int64_t> choices(m->groups().size());
      m->GroupArgmax(a.data(), choices.data());
      for (std::size_t g = 0; g < choices.size(); ++g) {
        if (choices[g] < 0 || choices[g] >= static_cast<std::int64_t>(m->groups()[g])) std::abort();
      }
    }
  } else if (auto* f = policy.fill()) {
    const std::size_t n = f->num_nodes();
    std::vector<double> raw(n), levels(n), mig(n), steal(n);
    for (std::size_t node = 0; node < n && node < 8; ++node) {
      for (auto& x : raw) x = rng.Uniform(0, 2000);
      f->Levels(raw.data(), levels.data());
      f->Tables(node, levels.data(), rng.Uniform(0.001f, 500.0f), mig.data(), steal.data());
      double sum = 0;
      for (double p : mig) sum += p;
      if (!(std::fabs(sum - 1.0) < 1e-6)) {  // a table of probabilities, whatever the gains
        std::fprintf(stderr, "fill: node %zu's migration table sums to %g\n", node, sum);
        std::abort();
      }
    }
  } else if (auto* v = policy.linear_value()) {
    in.resize(v->num_loads());
    for (std::size_t agent = 0; agent < v->num_agents() && agent < 8; ++agent) {
      for (auto& x : in) x = rng.Uniform(0, 2000);
      (void)v->Value(agent, in.data());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 200000;
  Rng rng{0x853C49E6748FEA9BULL};
  std::vector<Bytes> seeds = Seeds(rng);
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::string error;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    rt::Policy policy;
    if (!rt::ParsePolicy(seeds[s].data(), seeds[s].size(), &policy, &error)) {
      std::fprintf(stderr, "seed %zu does not load: %s\n", s, error.c_str());
      return 1;
    }
    Exercise(policy, rng);
  }
  long loaded = 0;
  for (long it = 0; it < iterations; ++it) {
    Bytes f = seeds[rng.Below(seeds.size())];
    Mutate(f, rng);
    rt::Policy policy;
    error.clear();
    // Copy into an exactly sized buffer so that ASan sees any read past the end.
    std::unique_ptr<unsigned char[]> exact(new unsigned char[f.size() + (f.empty() ? 1 : 0)]);
    std::copy(f.begin(), f.end(), exact.get());
    if (rt::ParsePolicy(exact.get(), f.size(), &policy, &error)) {
      ++loaded;
      Exercise(policy, rng);
    } else if (error.empty()) {
      std::fprintf(stderr, "iteration %ld: refused without a message\n", it);
      return 1;
    }
  }
  std::printf("fuzz_policy_file: %ld inputs, %ld loaded, %ld refused, no crash\n", iterations, loaded,
              iterations - loaded);
  return 0;
}
