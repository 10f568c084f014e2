// A multilayer perceptron policy as plain C++: dense layers with per-layer
// activations and an output head, the shape of RLlib's default PPO and SAC
// actor networks (encoder + pi head).
//
// Dependency-free (the C++17 standard library only), part of the deployment
// header (policy_file.hpp builds these from a policy file). Layers are
// y = activation(W x + b) with W row-major (out x in), as torch.nn.Linear
// stores it. Memory is allocated when the network is built; Act() only
// reads the weights and writes preallocated scratch, so it never allocates.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "dcgym/runtime/linear.hpp"

namespace dcgym::runtime {

/// The activation after a layer, with the numbers the policy file stores.
enum class Activation : std::uint32_t {
  kIdentity = 0,
  kRelu = 1,
  kTanh = 2,
  kSigmoid = 3,
  kElu = 4,   // alpha = 1 (torch.nn.ELU's default)
  kSilu = 5,  // x * sigmoid(x), also called swish
};
inline constexpr std::uint32_t kNumActivations = 6;

inline constexpr std::string_view ActivationName(Activation a) {
  switch (a) {
    case Activation::kIdentity: return "identity";
    case Activation::kRelu: return "relu";
    case Activation::kTanh: return "tanh";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kElu: return "elu";
    case Activation::kSilu: return "silu";
  }
  return "?";
}

/// How the last layer's K outputs y become the policy's output, with the
/// numbers the policy file stores.
enum class Head : std::uint32_t {
  kIdentity = 0,  // out = y (a Gaussian's mean, unbounded)
  kUnsquash = 1,  // out = clip(low + (y + 1) (high - low) / 2, low, high): a Gaussian's mean in RLlib's
                  // normalised action space mapped to the bounds (RLlib's unsquash_action)
  kTanh = 2,      // out = clip(low + (tanh(y) + 1) (high - low) / 2, low, high): a squashed Gaussian's
                  // deterministic action (SAC)
  kSoftmax = 3,   // out = softmax(y): a categorical's probabilities; the action is the argmax
  kArgmax = 4,    // out = y (Q-values or logits); the action is the argmax
  // Format version 2:
  kIncreasing = 5,        // K thresholds splitting [low, high] in log space into K + 1 gaps, gap i of weight
                          // exp(8 clip(y_i, -1, 1)), the last of weight 1: log out_i = log low + (log high -
                          // log low) sum_{j <= i} w_j / (1 + sum_j w_j) (AuTO's sRLA; NaN counts as -1)
  kMultiCategorical = 6,  // out = softmax of each group of y (groups of listed sizes); the action is each
                          // group's argmax (a MultiDiscrete action: AuTO's lRLA, per flow level, cap, path)
};
inline constexpr std::uint32_t kNumHeads = 7;
inline constexpr std::uint32_t kNumHeadsVersion1 = 5;  // heads 0 .. 4 exist in format version 1

/// The increasing head's gap weights are exp(kIncreasingGapScale x y) (flow_v0's sRLA map, the same scale).
inline constexpr float kIncreasingGapScale = 8.0f;

inline constexpr std::string_view HeadName(Head h) {
  switch (h) {
    case Head::kIdentity: return "identity";
    case Head::kUnsquash: return "unsquash";
    case Head::kTanh: return "tanh";
    case Head::kSoftmax: return "softmax";
    case Head::kArgmax: return "argmax";
    case Head::kIncreasing: return "increasing";
    case Head::kMultiCategorical: return "multi_categorical";
  }
  return "?";
}

/// Whether a head bounds its outputs with per-output `low` and `high`.
inline constexpr bool HeadHasBounds(Head h) {
  return h == Head::kUnsquash || h == Head::kTanh || h == Head::kIncreasing;
}
/// Whether a head picks one discrete action (the argmax of its outputs).
inline constexpr bool HeadIsDiscrete(Head h) { return h == Head::kSoftmax || h == Head::kArgmax; }

/// In place: activation `a` on z[0 .. n).
inline void Activate(Activation a, float* z, std::size_t n) {
  switch (a) {
    case Activation::kIdentity: return;
    case Activation::kRelu:
      for (std::size_t i = 0; i < n; ++i) z[i] = z[i] > 0.0f ? z[i] : 0.0f;
      return;
    case Activation::kTanh:
      for (std::size_t i = 0; i < n; ++i) z[i] = std::tanh(z[i]);
      return;
    case Activation::kSigmoid:
      for (std::size_t i = 0; i < n; ++i) z[i] = 1.0f / (1.0f + std::exp(-z[i]));
      return;
    case Activation::kElu:
      for (std::size_t i = 0; i < n; ++i) z[i] = z[i] > 0.0f ? z[i] : std::expm1(z[i]);
      return;
    case Activation::kSilu:
      for (std::size_t i = 0; i < n; ++i) z[i] = z[i] / (1.0f + std::exp(-z[i]));
      return;
  }
}

/// One dense layer: y = activation(weight x + bias), weight row-major (out x in).
struct DenseLayer {
  std::size_t in = 0;
  std::size_t out = 0;
  Activation activation = Activation::kIdentity;
  std::vector<float> weight;  // out * in
  std::vector<float> bias;    // out
};

/// A stack of dense layers (one network of an MLP policy).
struct Network {
  std::vector<DenseLayer> layers;

  /// The widest layer output (the scratch a forward pass needs).
  std::size_t MaxWidth() const {
    std::size_t w = 0;
    for (const auto& l : layers) w = std::max(w, l.out);
    return w;
  }
};

/// How an MLP policy reads its input (format version 5). Flat (rows == 0): the network maps the D inputs to
/// the K outputs. Row-wise (rows >= 1): the input is `rows` rows of `row_width` features followed by `shared`
/// features (D = rows x row_width + shared); the one network maps each row with the shared features appended
/// (row_width + shared inputs) to K / rows outputs, and row r's outputs are outputs r K / rows .. (r + 1) K /
/// rows - 1, before the head. The parameters do not grow with the rows: AuTO's lRLA over any number of flows.
struct RowLayout {
  std::size_t rows = 0;
  std::size_t row_width = 0;
  std::size_t shared = 0;
};

/// An MLP policy: one or more networks (one per agent, or one shared), an
/// agent -> network map, the input layout and the output head. Built valid by policy_file.hpp;
/// Act() assumes it (see the preconditions).
class MlpPolicy {
 public:
  MlpPolicy() = default;
  /// `groups`: the sizes of the multi_categorical head's groups (summing to K), empty for the other heads.
  MlpPolicy(std::size_t num_inputs, std::vector<Network> networks, std::vector<std::uint32_t> agent_network, Head head,
            std::vector<float> low, std::vector<float> high, std::vector<std::uint32_t> groups = {},
            RowLayout layout = {})
      : num_inputs_(num_inputs),
        networks_(std::move(networks)),
        agent_network_(std::move(agent_network)),
        head_(head),
        low_(std::move(low)),
        high_(std::move(high)),
        groups_(std::move(groups)),
        layout_(layout) {
    std::size_t width = 0;
    for (const auto& n : networks_) width = std::max(width, n.MaxWidth());
    const std::size_t per_row = networks_.empty() ? 0 : networks_.front().layers.back().out;
    num_outputs_ = layout_.rows > 0 ? per_row * layout_.rows : per_row;
    scratch_a_.assign(width, 0.0f);
    scratch_b_.assign(width, 0.0f);
    if (layout_.rows > 0) {
      row_input_.assign(layout_.row_width + layout_.shared, 0.0f);
      logits_.assign(num_outputs_, 0.0f);
    }
  }

  std::size_t num_inputs() const { return num_inputs_; }    // D, the observation size
  std::size_t num_outputs() const { return num_outputs_; }  // K, the last layer's width
  std::size_t num_agents() const { return agent_network_.size(); }
  std::size_t num_networks() const { return networks_.size(); }
  std::size_t network_of(std::size_t agent) const { return agent_network_[agent]; }
  const Network& network(std::size_t m) const { return networks_[m]; }
  Head head() const { return head_; }
  const std::vector<float>& low() const { return low_; }    // K entries for bounded heads, else empty
  const std::vector<float>& high() const { return high_; }  // K entries for bounded heads, else empty
  /// The multi_categorical head's group sizes (empty for the other heads).
  const std::vector<std::uint32_t>& groups() const { return groups_; }
  /// The input layout (rows == 0: flat).
  const RowLayout& layout() const { return layout_; }

  /// Agent `agent`'s output for observation `obs` (num_inputs() floats) into
  /// `out` (num_outputs() floats): the head's output (see Head). Returns the
  /// argmax of `out` (the action) for the discrete heads, -1 for the others
  /// (multi_categorical: GroupArgmax(out, ...) gives its action).
  /// Preconditions: agent < num_agents(); `obs` and `out` do not overlap.
  /// Never allocates; not thread-safe (one policy object per thread).
  std::int64_t Act(std::size_t agent, const float* obs, float* out) {
    const Network& net = networks_[agent_network_[agent]];
    const float* x;
    if (layout_.rows == 0) {
      x = Forward(net, obs);
    } else {  // the network on each row with the shared features appended, its outputs side by side
      const std::size_t w = layout_.row_width, per_row = num_outputs_ / layout_.rows;
      std::copy(obs + layout_.rows * w, obs + layout_.rows * w + layout_.shared, row_input_.begin() + w);
      for (std::size_t r = 0; r < layout_.rows; ++r) {
        std::copy(obs + r * w, obs + (r + 1) * w, row_input_.begin());
        const float* y = Forward(net, row_input_.data());
        std::copy(y, y + per_row, logits_.begin() + r * per_row);
      }
      x = logits_.data();
    }
    const std::size_t k = num_outputs_;
    switch (head_) {
      case Head::kIdentity:
      case Head::kArgmax: std::copy(x, x + k, out); break;
      case Head::kSoftmax:
        std::copy(x, x + k, out);
        Softmax(out, k);
        break;
      case Head::kUnsquash:
      case Head::kTanh:
        for (std::size_t i = 0; i < k; ++i) {
          const float u = head_ == Head::kTanh ? std::tanh(x[i]) : x[i];
          const float v = low_[i] + (u + 1.0f) * (high_[i] - low_[i]) / 2.0f;
          out[i] = std::min(std::max(v, low_[i]), high_[i]);
        }
        break;
      case Head::kIncreasing: {
        const auto weight = [&](std::size_t i) {
          const float a = std::isnan(x[i]) ? -1.0f : std::min(std::max(x[i], -1.0f), 1.0f);
          return std::exp(kIncreasingGapScale * a);
        };
        float total = 1.0f;  // the last gap's, from out[k - 1] to high
        for (std::size_t i = 0; i < k; ++i) total += weight(i);
        const float log_low = std::log(low_[0]), span = std::log(high_[0]) - log_low;
        float cumulative = 0.0f;
        for (std::size_t i = 0; i < k; ++i) {
          cumulative += weight(i);
          out[i] = std::min(std::max(std::exp(log_low + span * cumulative / total), low_[0]), high_[0]);
          if (i > 0) out[i] = std::max(out[i], out[i - 1]);  // rounding never reorders them
        }
        break;
      }
      case Head::kMultiCategorical: {
        std::copy(x, x + k, out);
        float* group = out;
        for (const std::uint32_t size : groups_) {
          Softmax(group, size);
          group += size;
        }
        break;
      }
    }
    if (!HeadIsDiscrete(head_)) return -1;
    return static_cast<std::int64_t>(std::max_element(out, out + k) - out);
  }

  /// The multi_categorical head's action: the argmax within each group of `out` (Act()'s output) into
  /// `choices` (groups().size() entries; ties to the lowest index, as torch.argmax). Never allocates.
  void GroupArgmax(const float* out, std::int64_t* choices) const {
    for (const std::uint32_t size : groups_) {
      *choices++ = static_cast<std::int64_t>(std::max_element(out, out + size) - out);
      out += size;
    }
  }

  /// Act() for agent 0 (a single-agent policy, or a network shared by every agent).
  std::int64_t Act(const float* obs, float* out) { return Act(0, obs, out); }

 private:
  /// The last layer's output for input `x` (the network's input width), in one of the scratch buffers.
  const float* Forward(const Network& net, const float* x) {
    float* y = scratch_a_.data();
    float* spare = scratch_b_.data();
    for (const DenseLayer& layer : net.layers) {
      Linear(layer.weight.data(), layer.out, layer.in, x, y);
      for (std::size_t r = 0; r < layer.out; ++r) y[r] += layer.bias[r];
      Activate(layer.activation, y, layer.out);
      x = y;
      std::swap(y, spare);
    }
    return x;
  }

  std::size_t num_inputs_ = 0;
  std::size_t num_outputs_ = 0;
  std::vector<Network> networks_;
  std::vector<std::uint32_t> agent_network_;
  Head head_ = Head::kIdentity;
  std::vector<float> low_;
  std::vector<float> high_;
  std::vector<std::uint32_t> groups_;
  RowLayout layout_;
  std::vector<float> row_input_;  // row-wise: one row and the shared features
  std::vector<float> logits_;     // row-wise: every row's outputs, before the head
  std::vector<float> scratch_a_;  // layer outputs, alternately
  std::vector<float> scratch_b_;
};

}  // namespace dcgym::runtime
