// The MLP policy's format-version-2 heads (runtime/mlp.hpp, policy_file.hpp):
// `increasing` (AuTO's sRLA thresholds: weighted gaps in log space, every
// output in [low, high] and non-decreasing) and `multi_categorical` (AuTO's
// lRLA: a softmax per group, each group's argmax), built in C++ and parsed
// from hand-written files; version-1 files refuse both heads.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.hpp"
#include "dcgym/runtime/policy_file.hpp"

namespace rt = dcgym::runtime;

namespace {

// One identity layer of K outputs whose bias is `bias` (weights 0): the head sees y = bias for any input.
rt::Network BiasNetwork(std::size_t in, const std::vector<float>& bias) {
  rt::DenseLayer layer;
  layer.in = in;
  layer.out = bias.size();
  layer.weight.assign(in * bias.size(), 0.0f);
  layer.bias = bias;
  rt::Network net;
  net.layers.push_back(layer);
  return net;
}

void PutU32(std::vector<unsigned char>& f, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) f.push_back(static_cast<unsigned char>(v >> (8 * k)));
}
void PutF32(std::vector<unsigned char>& f, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutU32(f, bits);
}

// A one-agent MLP file (D = 2, one layer of K outputs with bias `bias`) with `head`, its bounds or groups.
std::vector<unsigned char> File(std::uint32_t version, std::uint32_t head, const std::vector<float>& bias,
                                const std::vector<float>& low, const std::vector<float>& high,
                                const std::vector<std::uint32_t>& groups) {
  std::vector<unsigned char> body;
  const auto k = static_cast<std::uint32_t>(bias.size());
  for (std::uint32_t v : {2u, 1u, head, k, 0u}) PutU32(body, v);  // D, M, head, K, agent_network[0]
  for (float v : low) PutF32(body, v);
  for (float v : high) PutF32(body, v);
  if (!groups.empty()) {
    PutU32(body, static_cast<std::uint32_t>(groups.size()));
    for (auto g : groups) PutU32(body, g);
  }
  for (std::uint32_t v : {1u, 2u, k, 0u}) PutU32(body, v);  // one layer: in 2, out K, identity
  for (std::uint32_t i = 0; i < 2 * k; ++i) PutF32(body, 0.0f);
  for (float b : bias) PutF32(body, b);
  std::vector<unsigned char> f(rt::kPolicyMagic, rt::kPolicyMagic + 8);
  for (std::uint32_t v : {version, 2u, 1u, 0u}) PutU32(f, v);  // version, kind mlp, one agent, flags
  PutU32(f, static_cast<std::uint32_t>(body.size()));
  PutU32(f, 0);
  f.insert(f.end(), body.begin(), body.end());
  PutU32(f, rt::Crc32(f.data(), f.size()));
  return f;
}

void TestIncreasingHead() {
  const float lo = 1460.0f, hi = 1460.0f * 65536.0f;
  const std::vector<float> y = {-1.0f, 0.0f, 3.0f};  // 3.0 is clipped to 1
  rt::MlpPolicy p(2, {BiasNetwork(2, y)}, {0}, rt::Head::kIncreasing, {lo, lo, lo}, {hi, hi, hi});
  const float obs[2] = {0.3f, -0.7f};
  float out[3];
  CHECK_EQ(p.Act(obs, out), -1);
  // Gaps in log space of weights exp(8 a_i) and 1 (the last): w = e^-8, 1, e^8 (3.0 is clipped to 1), in double.
  const double log_lo = std::log(double{lo}), log_hi = std::log(double{hi});
  const double w[3] = {std::exp(-8.0), 1.0, std::exp(8.0)}, total = 1.0 + w[0] + w[1] + w[2];
  double cumulative = 0.0;
  for (int i = 0; i < 3; ++i) {
    cumulative += w[i];
    CHECK_NEAR(std::log(double{out[i]}), log_lo + (log_hi - log_lo) * cumulative / total, 1e-5);
  }
  // a = 0 everywhere spaces the thresholds evenly in log bytes: 1/4, 2/4, 3/4 of the range.
  rt::MlpPolicy even(2, {BiasNetwork(2, {0.0f, 0.0f, 0.0f})}, {0}, rt::Head::kIncreasing, {lo, lo, lo}, {hi, hi, hi});
  even.Act(obs, out);
  for (int i = 0; i < 3; ++i) CHECK_NEAR(std::log(double{out[i]}), log_lo + (i + 1) * (log_hi - log_lo) / 4.0, 1e-5);
  // Any outputs give non-decreasing thresholds in [lo, hi]; all +1 leave the last gap a share 1 / (1 + 3 e^8).
  rt::MlpPolicy top(2, {BiasNetwork(2, {5.0f, 5.0f, 5.0f})}, {0}, rt::Head::kIncreasing, {lo, lo, lo}, {hi, hi, hi});
  top.Act(obs, out);
  CHECK(out[0] <= out[1] && out[1] <= out[2]);
  CHECK_NEAR(std::log(double{out[2]}), log_hi - (log_hi - log_lo) / (1.0 + 3.0 * std::exp(8.0)), 1e-5);
  CHECK(out[2] <= hi);
}

void TestMultiCategoricalHead() {
  const std::vector<float> y = {0.0f, 2.0f, 1.0f, 5.0f, 5.0f, -1.0f, 3.0f, 0.5f};
  rt::MlpPolicy p(2, {BiasNetwork(2, y)}, {0}, rt::Head::kMultiCategorical, {}, {}, {3, 2, 3});
  const float obs[2] = {1.0f, 1.0f};
  float out[8];
  CHECK_EQ(p.Act(obs, out), -1);
  std::int64_t choices[3];
  p.GroupArgmax(out, choices);
  CHECK_EQ(choices[0], 1);
  CHECK_EQ(choices[1], 0);  // a tie goes to the lower index (torch.argmax)
  CHECK_EQ(choices[2], 1);
  const std::size_t starts[3] = {0, 3, 5}, sizes[3] = {3, 2, 3};
  for (int g = 0; g < 3; ++g) {
    double total = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < sizes[g]; ++i) norm += std::exp(double{y[starts[g] + i]});
    for (std::size_t i = 0; i < sizes[g]; ++i) {
      total += out[starts[g] + i];
      CHECK_NEAR(out[starts[g] + i], std::exp(double{y[starts[g] + i]}) / norm, 1e-6);
    }
    CHECK_NEAR(total, 1.0, 1e-6);
  }
}

void TestParsing() {
  rt::Policy policy;
  std::string error;
  const float lo = 10.0f, hi = 1000.0f;
  CHECK(rt::ParsePolicy(File(2, 5, {0.0f, 0.0f}, {lo, lo}, {hi, hi}, {}).data(),
                        File(2, 5, {0.0f, 0.0f}, {lo, lo}, {hi, hi}, {}).size(), &policy, &error));
  CHECK(policy.mlp() != nullptr && policy.mlp()->head() == rt::Head::kIncreasing);
  float out[2];
  const float obs[2] = {0.0f, 0.0f};
  policy.mlp()->Act(obs, out);
  CHECK_NEAR(out[1] / 215.443469f, 1.0, 1e-5);  // a = 0: evenly spaced in log bytes, 10^(1 + 4/3)

  auto multi = File(2, 6, {1.0f, 0.0f, 0.0f, 2.0f}, {}, {}, {2, 2});
  CHECK(rt::ParsePolicy(multi.data(), multi.size(), &policy, &error));
  CHECK(policy.mlp()->groups() == (std::vector<std::uint32_t>{2, 2}));

  const auto refuse = [&](const std::vector<unsigned char>& f, const std::string& prefix) {
    rt::Policy unused;
    std::string message;
    CHECK(!rt::ParsePolicy(f.data(), f.size(), &unused, &message));
    CHECK_EQ(message.substr(0, prefix.size()), prefix);
  };
  refuse(File(1, 5, {0.0f, 0.0f}, {lo, lo}, {hi, hi}, {}), "mlp.head: got 5; expected 0 .. 4");
  refuse(File(1, 6, {0.0f, 0.0f}, {}, {}, {1, 1}), "mlp.head: got 6; expected 0 .. 4");
  refuse(File(2, 7, {0.0f}, {}, {}, {}), "mlp.head: got 7; expected 0 .. 6");
  refuse(File(2, 5, {0.0f, 0.0f}, {0.0f, 0.0f}, {hi, hi}, {}), "mlp.low[0]: got 0; expected > 0");
  refuse(File(2, 5, {0.0f, 0.0f}, {lo, 20.0f}, {hi, hi}, {}), "mlp.low[1]: got 20; expected mlp.low[0] (10)");
  refuse(File(2, 6, {0.0f, 0.0f, 0.0f}, {}, {}, {2, 2}), "mlp.groups: got sizes summing to 4; expected 3");
  refuse(File(2, 6, {0.0f, 0.0f}, {}, {}, {2, 0}), "mlp.groups[1]: got 0; expected 1 .. 2");
  refuse(File(rt::kPolicyVersion + 1, 4, {0.0f}, {}, {}, {}),
         "header.version: got " + std::to_string(rt::kPolicyVersion + 1) + "; expected 1 .. " +
             std::to_string(rt::kPolicyVersion));
}

}  // namespace

int main() {
  TestIncreasingHead();
  TestMultiCategoricalHead();
  TestParsing();
  return dcgym::check::Report("mlp_heads");
}
