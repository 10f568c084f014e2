// Malcolm's learning (POMACS 2022, Algorithm 1, §6.1-6.2) as plain C++: every
// node's linear actor-critic, its closed-form mini-batch update, AdamW and the
// consensus of the critics.
//
// Dependency-free (the C++17 standard library only), like linear.hpp, so that
// it ships in the deployment header. The Python twin, and the reference for
// every number here, is agents/malcolm/malcolm_learner.py (MalcolmTorchLearner
// with its MalcolmConfig defaults); tests/runtime/test_learner.py checks that
// both compute the same gradients and AdamW steps.
//
// One mini-batch is D heartbeats of one node: loads x_t, next loads x'_t
// (both already multiplied by load_scale), the team reward u_t (unscaled:
// multiplied by reward_scale here), the node's decision counts c_t per
// destination for both actors, episode starts and terminations.
//
// - paper (Algorithm 1): δ_t = u_t + γ V(x'_t) - V(x_t); actor step of one
//   heartbeat Σ_j c_tj ∇log π_j = (c_t - Σc_t π_t) ⊗ φ_a(x_t).
// - code (the authors' implementation): δ_t = u_t - R̄_t + V(x'_t) - V(x_t),
//   R̄_{t+1} = R̄_t + η δ_t; actor step (c_t / Σc_t - π_t) ⊗ φ_a(x_t), 0 when
//   nothing was decided.
//
// Both use traces e_t = κ e_{t-1} + ∇_t (κ = γλ for paper, λ for code; λ
// defaults to 0 for paper, 0.6 for code), reset at episode starts and
// carried across mini-batches. The ascent direction is (1/D) Σ_t δ_t e_t;
// AdamW receives its negation (the gradient of the Python learner's
// surrogate loss). It is computed without materialising the traces per row:
// with β_s = Σ_{t>=s, same episode} κ^(t-s) δ_t (a backward recursion), the
// direction is (1/D) [Σ_s β_s ∇_s + (Σ_t carry_t δ_t) E] where E is the trace
// left by the previous mini-batch and carry_t = κ^(t+1) until the first
// episode start (malcolm_learner.trace_weights).
//
// The critic θ (F_c) is stored as MalcolmRLModule holds it; the migration and
// stealing actors W_m, W_s (N x F_a each there) are packed side by side and
// transposed (linear.hpp: F_a rows of S = PackedWidth(2N) floats), so that
// acting is one pass over contiguous rows and both actors' gradients and AdamW
// steps are one call each. ExportActor / ImportActor convert. Nothing on
// the update path allocates: every buffer is sized at construction.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dcgym/runtime/expf.hpp"
#include "dcgym/runtime/fused.hpp"
#include "dcgym/runtime/linear.hpp"

// DCGYM_CLONES (linear.hpp) compiles the hot loops for several x86-64 levels.

namespace dcgym::runtime {

// ------------------------------------------------------------------ kernels

/// While alive, denormal floats are flushed to zero (x86 SSE: MXCSR FTZ and
/// DAZ; elsewhere nothing). Moments and traces that decay geometrically
/// (a parameter whose feature stays 0) otherwise become denormals, which cost
/// ~100 cycles per operation; flushing changes results only below 1e-38.
class FlushDenormals {
 public:
#if defined(__SSE__) && (defined(__GNUC__) || defined(__clang__))
  FlushDenormals() : saved_(__builtin_ia32_stmxcsr()) { __builtin_ia32_ldmxcsr(saved_ | 0x8040u); }
  ~FlushDenormals() { __builtin_ia32_ldmxcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_;
#endif
};

/// e^x for x <= 0 to float precision (expf.hpp).
inline float ExpNonPositive(float x) { return cephes::Exp<float, std::int32_t>(x); }

#if defined(__GNUC__)
namespace detail {
typedef float Vec8 __attribute__((vector_size(32)));
typedef float Vec4 __attribute__((vector_size(16)));

// ExpNonPositive on 16 lanes.
__attribute__((always_inline)) inline Vec16 ExpV(Vec16 x) { return cephes::Exp<Vec16, IVec16>(x); }

__attribute__((always_inline)) inline float HSum(Vec16 v) {
  Vec8 a, b;
  std::memcpy(&a, &v, sizeof a);
  std::memcpy(&b, reinterpret_cast<const char*>(&v) + sizeof a, sizeof b);
  a += b;
  Vec4 c, d;
  std::memcpy(&c, &a, sizeof c);
  std::memcpy(&d, reinterpret_cast<const char*>(&a) + sizeof c, sizeof d);
  c += d;
  return (c[0] + c[2]) + (c[1] + c[3]);
}

__attribute__((always_inline)) inline float HMax(Vec16 v) {
  Vec8 a, b;
  std::memcpy(&a, &v, sizeof a);
  std::memcpy(&b, reinterpret_cast<const char*>(&v) + sizeof a, sizeof b);
  a = a > b ? a : b;
  Vec4 c, d;
  std::memcpy(&c, &a, sizeof c);
  std::memcpy(&d, reinterpret_cast<const char*>(&a) + sizeof c, sizeof d);
  c = c > d ? c : d;
  const float m0 = c[0] > c[2] ? c[0] : c[2], m1 = c[1] > c[3] ? c[1] : c[3];
  return m0 > m1 ? m0 : m1;
}

// Lanes [0, r) of z (r <= 16), the others `fill`.
__attribute__((always_inline)) inline Vec16 LoadPartial(const float* z, std::size_t r, float fill) {
  float buf[16];
  for (std::size_t k = 0; k < 16; ++k) buf[k] = fill;
  std::memcpy(buf, z, r * sizeof(float));
  return LoadV(buf);
}

__attribute__((always_inline)) inline void StorePartial(float* z, std::size_t r, Vec16 v) {
  float buf[16];
  StoreV(buf, v);
  std::memcpy(z, buf, r * sizeof(float));
}

// e[i] = ExpNonPositive(z[i] - m) for i < n; returns Σ e (16 lanes, then a tree).
__attribute__((always_inline)) inline float ExpShiftedV(const float* z, float m, std::size_t n, float* e) {
  Vec16 sum{};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const Vec16 v = ExpV(LoadV(z + i) - m);
    StoreV(e + i, v);
    sum += v;
  }
  if (i < n) {
    const std::size_t r = n - i;
    Vec16 v = ExpV(LoadPartial(z + i, r, m) - m);
    StorePartial(e + i, r, v);
    IVec16 lane;
    for (int k = 0; k < 16; ++k) lane[k] = k;
    sum += lane < static_cast<std::int32_t>(r) ? v : Vec16{};
  }
  return HSum(sum);
}

__attribute__((always_inline)) inline float MaxV(const float* z, std::size_t n) {
  Vec16 m = LoadPartial(z, n < 16 ? n : 16, z[0]);
  std::size_t i = 16;
  for (; i + 16 <= n; i += 16) {
    const Vec16 v = LoadV(z + i);
    m = v > m ? v : m;
  }
  if (i < n) {
    const Vec16 v = LoadPartial(z + i, n - i, z[0]);
    m = v > m ? v : m;
  }
  return HMax(m);
}
}  // namespace detail
#endif

/// In place: z -> softmax(z) with ExpNonPositive; maximum and sum in 16
/// lanes (vectorised; the sum's order differs from a plain loop).
DCGYM_CLONES inline void FastSoftmax(float* z, std::size_t n) {
#if defined(__GNUC__)
  const float m = detail::MaxV(z, n);
  const float inv = 1.0f / detail::ExpShiftedV(z, m, n, z);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) detail::StoreV(z + i, detail::LoadV(z + i) * inv);
  for (; i < n; ++i) z[i] *= inv;
#else
  float m = z[0];
  for (std::size_t i = 1; i < n; ++i) m = z[i] > m ? z[i] : m;
  float total = 0.0f;
  for (std::size_t i = 0; i < n; ++i) total += (z[i] = ExpNonPositive(z[i] - m));
  const float inv = 1.0f / total;
  for (std::size_t i = 0; i < n; ++i) z[i] *= inv;
#endif
}

/// The exponentials of one rack_v0 table row (MalcolmRLModule._centre then
/// RackGame.probabilities): c = clip(z - ½(max z + min z), ±max_logit),
/// e = exp(c - max c) into e[0, n); returns Σ e, and in *clipped whether the
/// clip changed anything. `tmp` is scratch of n floats.
DCGYM_CLONES inline float TableExponentials(const float* z, std::size_t n, float max_logit, float* tmp, float* e,
                                            bool* clipped) {
#if defined(DCGYM_FUSED_AVX512)
  if (fused::Applies(n)) return fused::TableExponentials(z, n, max_logit, e, clipped);
#endif
  float hi = z[0], lo = z[0];
  for (std::size_t j = 1; j < n; ++j) {
    hi = z[j] > hi ? z[j] : hi;
    lo = z[j] < lo ? z[j] : lo;
  }
  const float centre = 0.5f * (hi + lo);
  const float top = hi - centre;  // the largest centred logit
  *clipped = top > max_logit || lo - centre < -max_logit;
  const float m = top > max_logit ? max_logit : top;  // the largest after the clip
  for (std::size_t j = 0; j < n; ++j) {
    float c = z[j] - centre;
    tmp[j] = c > max_logit ? max_logit : (c < -max_logit ? -max_logit : c);
  }
#if defined(__GNUC__)
  return detail::ExpShiftedV(tmp, m, n, e);
#else
  float total = 0.0f;
  for (std::size_t j = 0; j < n; ++j) total += (e[j] = ExpNonPositive(tmp[j] - m));
  return total;
#endif
}

/// sqrt(v) for v >= 0 to about one ulp: a bit-level guess of 1/sqrt(v), three
/// Newton steps, times v. Plain arithmetic, so loops over it vectorise
/// (std::sqrt does not without -fno-math-errno, which -O3 does not imply).
inline float SqrtNonNegative(float v) {
  std::int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits = 0x5F3759DF - (bits >> 1);
  float y;
  std::memcpy(&y, &bits, sizeof y);
  const float half = 0.5f * v;
  y = y * (1.5f - half * y * y);
  y = y * (1.5f - half * y * y);
  y = y * (1.5f - half * y * y);
  return v * y;  // 0 for v == 0 (y stays finite)
}

/// torch.optim.AdamW's settings.
struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-6f;
  float weight_decay = 1e-4f;
};

/// One step of torch.optim.AdamW (decoupled decay, bias-corrected moments) on
/// n parameters `p` with gradient `g`; `m`, `v` are the moments, `step` the
/// step number after this one (1 for the first).
DCGYM_CLONES inline void AdamWStep(float* p, const float* g, float* m, float* v, std::size_t n, std::uint64_t step,
                                   const AdamWConfig& c) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(c.beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(c.beta2), static_cast<double>(step));
  const float decay = 1.0f - c.lr * c.weight_decay;
  const float step_size = static_cast<float>(c.lr / bc1);
  const float inv_bc2_sqrt = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = c.beta1, b2 = c.beta2, eps = c.eps;
  for (std::size_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] + (1.0f - b1) * (gi - m[i]);  // torch: exp_avg.lerp_(grad, 1 - beta1)
    const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float denom = SqrtNonNegative(vi) * inv_bc2_sqrt + eps;
    p[i] = p[i] * decay - step_size * (mi / denom);
  }
}

// ------------------------------------------------------------------- policy

/// The two actors of one node over the actor basis: φ_a(x), logits, softmax.
/// The weights are packed (linear.hpp): F_a rows of S = PackedWidth(2N)
/// floats, [W_m[:, c] | W_s[:, c] | 0]. A workspace (scratch sized at
/// construction); parameters are passed in.
class ActorPolicy {
 public:
  ActorPolicy(std::size_t n, Basis basis)
      : n_(n), basis_(basis), f_(runtime::NumFeatures(basis, n)), s_(PackedWidth(2 * n)), rank_table_(n), rank_(n) {
    RankFeatureTable(n, rank_table_.data());
  }

  std::size_t NumNodes() const { return n_; }
  std::size_t NumFeatures() const { return f_; }
  /// S: the packed row width, and the length of a logits / probabilities vector.
  std::size_t Width() const { return s_; }
  Basis GetBasis() const { return basis_; }

  /// φ_a(x) into phi (F_a entries).
  void Features(const float* x, float* phi) { runtime::Features(basis_, x, n_, rank_table_.data(), rank_.data(), phi); }

  /// From φ_a: the raw logits of both actors, z[0, N) migration, z[N, 2N) stealing (z has S entries).
  void Logits(const float* phi, const float* packed, float* z) const { PackedLinear(packed, f_, s_, phi, z); }

  /// φ_a(x) into phi and both actors' raw logits into z (S entries): Features, then Logits.
  void FeaturesAndLogits(const float* x, const float* packed, float* phi, float* z) {
    Features(x, phi);
    Logits(phi, packed, z);
  }

  /// RackController's step, fused when that applies (runtime/fused.hpp,
  /// SortTableRows): φ_a(x), the raw logits z, each actor's table
  /// exponentials e (2N), rows (double), sums and clip flags. False: not
  /// applicable, nothing written (use FeaturesAndLogits and TableExponentials).
  bool TableRows(const float* x, const float* packed, float max_logit, float* phi, float* z, float* e, double* row_m,
                 double* row_s, float* totals, bool* clipped) {
    return basis_ == Basis::kSort &&
           SortTableRows(x, n_, rank_table_.data(), packed, max_logit, phi, z, e, row_m, row_s, totals, clipped);
  }

  /// Everything in one call: φ_a(x) into phi, then into z (S entries)
  /// softmax(W_m φ_a) at [0, N) and softmax(W_s φ_a) at [N, 2N).
  void Probabilities(const float* x, const float* packed, float* phi, float* z) {
    if (basis_ == Basis::kSort && SortProbabilities(x, n_, rank_table_.data(), packed, phi, z)) return;
    Features(x, phi);
    Logits(phi, packed, z);
    FastSoftmax(z, n_);
    FastSoftmax(z + n_, n_);
  }

 private:
  std::size_t n_;
  Basis basis_;
  std::size_t f_, s_;
  std::vector<float> rank_table_;
  std::vector<std::uint32_t> rank_;
};

// ------------------------------------------------------------------ learner

enum class Variant : std::uint32_t { kPaper = 0, kCode = 1 };

/// MalcolmConfig's learning settings, with its defaults.
struct LearnerConfig {
  Variant variant = Variant::kPaper;
  double gamma = 0.99;                   // the paper's discount (unused by code)
  std::optional<double> trace_lambda;    // λ in [0, 1]; none: the variant's (paper 0, code 0.6)
  double average_reward_step = 1e-3;     // η of R̄ (code)
  double reward_scale = 0.01;            // rewards are multiplied by it before δ
  float load_scale = 0.1f;               // loads are multiplied by it before the bases (by the caller)
  std::uint32_t minibatch_size = 20;     // D
  std::uint32_t consensus_period = 100;  // P (0: never)
  Basis critic_basis = Basis::kCustomized;
  Basis actor_basis = Basis::kSort;
  float lr_critic = 2e-3f;
  float lr_actor = 1e-3f;
  AdamWConfig adam;  // its lr is replaced by lr_critic / lr_actor

  /// The AdamW settings of the critic's block and of the actor's: `adam` at lr_critic and at lr_actor.
  AdamWConfig CriticAdam() const { return WithLr(lr_critic); }
  AdamWConfig ActorAdam() const { return WithLr(lr_actor); }

  static constexpr std::uint32_t kMaxMinibatch = 100000;  // D: the learner keeps D rows of scratch per block

  double Lambda() const { return trace_lambda ? *trace_lambda : (variant == Variant::kCode ? 0.6 : 0.0); }
  /// κ of the traces: λ for the average-reward form, γλ for the discounted one.
  double Kappa() const { return Lambda() * (variant == Variant::kCode ? 1.0 : gamma); }
  AdamWConfig WithLr(float lr) const {
    AdamWConfig out = adam;
    out.lr = lr;
    return out;
  }

  void Validate() const {
    auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
    if (!(gamma >= 0 && gamma <= 1)) bad("gamma: must be in [0, 1], got " + std::to_string(gamma));
    if (trace_lambda && !(*trace_lambda >= 0 && *trace_lambda <= 1))
      bad("trace_lambda: must be None or in [0, 1], got " + std::to_string(*trace_lambda));
    if (!(average_reward_step > 0 && average_reward_step <= 1))
      bad("average_reward_step: must be in (0, 1], got " + std::to_string(average_reward_step));
    if (!(reward_scale > 0)) bad("reward_scale: must be > 0, got " + std::to_string(reward_scale));
    if (!(load_scale > 0)) bad("load_scale: must be > 0, got " + std::to_string(load_scale));
    if (minibatch_size < 1 || minibatch_size > kMaxMinibatch)
      bad("minibatch_size: must be in [1, " + std::to_string(kMaxMinibatch) + "], got " +
          std::to_string(minibatch_size));
    if (!(lr_critic > 0) || !(lr_actor > 0)) bad("lr_critic, lr_actor: must be > 0");
    if (!(adam.beta1 >= 0 && adam.beta1 < 1 && adam.beta2 >= 0 && adam.beta2 < 1)) bad("adam_betas: must be in [0, 1)");
    if (!(adam.eps > 0)) bad("adam_epsilon: must be > 0");
    if (!(adam.weight_decay >= 0)) bad("weight_decay: must be >= 0");
    if (static_cast<std::uint32_t>(critic_basis) >= kNumBases || static_cast<std::uint32_t>(actor_basis) >= kNumBases)
      bad("critic_basis, actor_basis: unknown basis");
  }
};

/// One node's mini-batch of D heartbeats (row-major arrays; see the file comment).
struct Batch {
  std::size_t d = 0;
  const float* x = nullptr;                     // D x N loads (x load_scale)
  const float* next_x = nullptr;                // D x N; next_x == x + N means consecutive (V reused)
  const double* reward = nullptr;               // D team rewards, unscaled
  const float* migrate = nullptr;               // D x N migration decisions per destination
  const float* steal = nullptr;                 // D x N stealing decisions per victim
  const std::uint8_t* episode_start = nullptr;  // D flags, or null (none)
  const std::uint8_t* terminated = nullptr;     // D flags, or null (none)
  // Optional, from acting with the same parameters: φ_a(x_t) (D x F_a) and the
  // raw softmax of both actors (D x S, ActorPolicy::Probabilities' layout:
  // migration at [0, N), stealing at [N, 2N) of each row). Null: recomputed from x.
  const float* phi_a = nullptr;
  const float* pi = nullptr;
};

/// Algorithm 1's consensus: every node's `critic` (F_c floats) set to the mean of all of them, in node order;
/// `mean` is scratch of F_c floats. Nothing else of the nodes changes; one node is left as it is.
template <class Node>
void AverageCritics(std::vector<Node>& nodes, std::size_t fc, float* mean) {
  if (nodes.size() < 2) return;
  for (std::size_t c = 0; c < fc; ++c) mean[c] = 0.0f;
  for (const Node& node : nodes)
    for (std::size_t c = 0; c < fc; ++c) mean[c] += node.critic[c];
  const float inv = 1.0f / static_cast<float>(nodes.size());
  for (std::size_t c = 0; c < fc; ++c) mean[c] *= inv;
  for (Node& node : nodes) std::copy(mean, mean + fc, node.critic.begin());
}

/// The parameters, optimizer states, traces and R̄ of every node, and the update.
class MalcolmLearner {
 public:
  /// Parameters of one node: the critic θ (F_c) and both actors packed
  /// (ActorPolicy: F_a x S, W_m and W_s transposed side by side, zero padding).
  /// ExportActor / ImportActor convert to MalcolmRLModule's row-major N x F_a.
  struct Node {
    std::vector<float> critic, grad_critic, trace_critic, m_critic, v_critic;  // θ, its loss gradient, E, AdamW moments
    AlignedVector<float> actor, grad_actor, trace_actor, m_actor, v_actor;     // the same for the packed actors
    std::uint64_t steps = 0;   // AdamW steps taken (the same for the node's three optimizers)
    double reward_rate = 0.0;  // R̄ (code)
  };
  enum class Actor { kMigration = 0, kStealing = 1 };

  static constexpr std::size_t kMaxNodes = 4096;  // N: the parameters grow as N^2 per node

  /// Refuses (std::invalid_argument) N outside [1, kMaxNodes] or an invalid config before allocating.
  MalcolmLearner(std::size_t num_nodes, const LearnerConfig& config)
      : n_(CheckedNodes(num_nodes)),
        config_((config.Validate(), config)),
        fc_(NumFeatures(config.critic_basis, num_nodes)),
        fa_(NumFeatures(config.actor_basis, num_nodes)),
        s_(PackedWidth(2 * num_nodes)),
        policy_(num_nodes, config.actor_basis),
        nodes_(num_nodes),
        rank_table_(num_nodes),
        rank_(num_nodes) {
    RankFeatureTable(n_, rank_table_.data());
    for (Node& node : nodes_) {
      for (auto* v : {&node.critic, &node.grad_critic, &node.trace_critic, &node.m_critic, &node.v_critic})
        v->assign(fc_, 0.0f);
      for (auto* v : {&node.actor, &node.grad_actor, &node.trace_actor, &node.m_actor, &node.v_actor})
        v->assign(fa_ * s_, 0.0f);
    }
    Reserve(config_.minibatch_size);
  }

  std::size_t NumNodes() const { return n_; }
  std::size_t CriticFeatures() const { return fc_; }
  std::size_t ActorFeatures() const { return fa_; }
  /// S, the packed actors' row width (PackedWidth(2N)).
  std::size_t ActorWidth() const { return s_; }

  /// Row-major N x F_a (MalcolmRLModule's layout) of one actor of a packed block.
  void ExportActor(const AlignedVector<float>& packed, Actor a, float* out) const {
    const std::size_t off = a == Actor::kStealing ? n_ : 0;
    for (std::size_t r = 0; r < n_; ++r)
      for (std::size_t c = 0; c < fa_; ++c) out[r * fa_ + c] = packed[c * s_ + off + r];
  }
  /// The inverse of ExportActor (the padding stays 0).
  void ImportActor(AlignedVector<float>& packed, Actor a, const float* in) const {
    const std::size_t off = a == Actor::kStealing ? n_ : 0;
    for (std::size_t r = 0; r < n_; ++r)
      for (std::size_t c = 0; c < fa_; ++c) packed[c * s_ + off + r] = in[r * fa_ + c];
  }
  const LearnerConfig& Config() const { return config_; }
  /// Node i's parameters and state; std::invalid_argument when there is no node i.
  Node& At(std::size_t i) { return nodes_[CheckedNode(i)]; }
  const Node& At(std::size_t i) const { return nodes_[CheckedNode(i)]; }
  /// Mini-batch rounds completed (the consensus clock).
  std::uint64_t NumUpdates() const { return num_updates_; }

  /// Every parameter uniform in ±1/sqrt(F) (F = the features of its block),
  /// node by node, critic, migration, stealing, from a SplitMix64 stream.
  void InitUniform(std::uint64_t seed) {
    std::uint64_t state = seed;
    auto uniform = [&state](float bound) {
      std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      const double u = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
      return static_cast<float>((2.0 * u - 1.0) * bound);
    };
    for (Node& node : nodes_) {
      const float bc = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fc_)));
      const float ba = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fa_)));
      for (float& w : node.critic) w = uniform(bc);
      for (std::size_t off : {std::size_t{0}, n_})  // migration, then stealing, each row-major
        for (std::size_t r = 0; r < n_; ++r)
          for (std::size_t c = 0; c < fa_; ++c) node.actor[c * s_ + off + r] = uniform(ba);
    }
  }

  /// Sizes the scratch for mini-batches of up to d rows (allocates: call before the hot path).
  void Reserve(std::size_t d) {
    if (d <= capacity_) return;
    capacity_ = d;
    value_.resize(d);
    next_value_.resize(d);
    delta_.resize(d);
    beta_.resize(d);
    last_w_.resize(d);
    phi_c_.resize(fc_);
    phi_a_.resize(d * fa_);
    pi_.resize(d * s_);
    coef_.assign(d * s_, 0.0f);  // the padding columns stay 0
    coef_trace_.assign(d * s_, 0.0f);
  }

  /// V_θ(x) of node i, x the N scaled loads (uses scratch: not thread-safe).
  float Value(std::size_t i, const float* x) {
    CriticFeatures(x, phi_c_.data());
    return Dot(nodes_[i].critic.data(), phi_c_.data(), fc_);
  }

  /// Node i's loss gradients for `batch` (into grad_*), the traces and R̄
  /// carried to the next mini-batch, then one AdamW step of its three blocks.
  void Update(std::size_t i, const Batch& batch) {
    FlushDenormals flush;
    ComputeGradients(i, batch);
    ApplyGradients(i);
  }

  /// The loss gradients of node i for `batch` (minus the ascent direction)
  /// into grad_*, and the new traces and R̄; parameters are not changed.
  void ComputeGradients(std::size_t i, const Batch& b) {
    FlushDenormals flush;
    const std::size_t d = b.d, n = n_;
    if (d < 1 || d > capacity_) throw std::invalid_argument("batch: rows must be in [1, Reserve()d]");
    Node& node = At(i);
    const bool code = config_.variant == Variant::kCode;
    const double kappa = config_.Kappa();
    const bool traced = kappa > 0.0;

    // 1. V(x_t), V(x'_t) with the current θ; δ_t.
    const bool consecutive = (b.next_x == b.x + n);
    for (std::size_t t = 0; t < d; ++t) value_[t] = Value(i, b.x + t * n);
    for (std::size_t t = 0; t < d; ++t) {
      next_value_[t] = (consecutive && t + 1 < d) ? value_[t + 1] : Value(i, b.next_x + t * n);
      if (b.terminated && b.terminated[t]) next_value_[t] = 0.0f;
    }
    double rate = node.reward_rate;
    for (std::size_t t = 0; t < d; ++t) {
      const double r = static_cast<double>(static_cast<float>(b.reward[t] * config_.reward_scale));
      if (code) {
        const double advantage = r + next_value_[t] - value_[t];
        delta_[t] = advantage - rate;
        rate += config_.average_reward_step * (advantage - rate);
      } else {
        delta_[t] = r + config_.gamma * next_value_[t] - value_[t];
      }
    }
    node.reward_rate = rate;

    // 2. Trace weights: β_s = δ_s + κ β_{s+1} within an episode; the carry of
    // the old trace E into the direction, its weight in the new trace, and the
    // weight of each row in the new trace.
    double carry_coef = 0.0, carry_last = 0.0;
    bool started = false;
    double k_pow = 1.0;
    for (std::size_t t = 0; t < d; ++t) {
      started = started || (b.episode_start && b.episode_start[t]);
      k_pow *= kappa;
      if (!started) carry_coef += k_pow * delta_[t];
    }
    if (!started) carry_last = k_pow;  // κ^D
    double acc = 0.0, w = 1.0;
    bool open = true;  // no episode start in (s, D-1]
    for (std::size_t s = d; s-- > 0;) {
      acc = delta_[s] + kappa * acc;
      beta_[s] = acc;
      last_w_[s] = open ? w : 0.0;
      w *= kappa;
      if (b.episode_start && b.episode_start[s]) {
        acc = 0.0;
        open = false;
      }
    }
    const float inv_d = static_cast<float>(-1.0 / static_cast<double>(d));  // loss = -direction / D

    // 3. Critic: grad = -(Σ_s β_s φ_c(x_s) + carry E_c) / D; E_c' = Σ_s w_s φ_c(x_s) + κ^D E_c.
    float* gc = node.grad_critic.data();
    float* ec = node.trace_critic.data();
    const float gc_carry = traced ? static_cast<float>(carry_coef) * inv_d : 0.0f;
    for (std::size_t c = 0; c < fc_; ++c) gc[c] = gc_carry * ec[c];
    if (traced) Scale(ec, fc_, static_cast<float>(carry_last));
    for (std::size_t s = 0; s < d; ++s) {
      CriticFeatures(b.x + s * n, phi_c_.data());
      Axpy(gc, phi_c_.data(), fc_, static_cast<float>(beta_[s]) * inv_d);
      if (traced) Axpy(ec, phi_c_.data(), fc_, static_cast<float>(last_w_[s]));
    }

    // 4. Actors: φ_a and π per row (given or recomputed), then the rows' coefficients
    // a_s = c̃_s - Σc̃_s π_s times β_s (gradient) or w_s (trace), and the outer products.
    const float* phi_a = b.phi_a;
    const float* pi = b.pi;
    if (!(phi_a && pi)) {
      for (std::size_t t = 0; t < d; ++t)
        policy_.Probabilities(b.x + t * n, node.actor.data(), phi_a_.data() + t * fa_, pi_.data() + t * s_);
      phi_a = phi_a_.data();
      pi = pi_.data();
    }
    const float carry_g = traced ? static_cast<float>(carry_coef) * inv_d : 0.0f;
    ActorCoefficients(b.migrate, pi, d, inv_d, code, 0);
    ActorCoefficients(b.steal, pi, d, inv_d, code, n);
    // A zero carry skips reading the old trace (it may be anything on the first mini-batch).
    float* ga = node.grad_actor.data();
    const std::size_t na = fa_ * s_;
    if (traced && carry_g != 0.0f) {
      const float* ea = node.trace_actor.data();
      for (std::size_t k = 0; k < na; ++k) ga[k] = carry_g * ea[k];
      PackedOuter(ga, fa_, s_, 1.0f, coef_.data(), phi_a, d);
    } else {
      PackedOuter(ga, fa_, s_, 0.0f, coef_.data(), phi_a, d);
    }
    if (traced)
      PackedOuter(node.trace_actor.data(), fa_, s_, static_cast<float>(carry_last), coef_trace_.data(), phi_a, d);
  }

  /// One AdamW step of node i's three blocks with the gradients in grad_*.
  void ApplyGradients(std::size_t i) {
    FlushDenormals flush;
    Node& node = At(i);
    ++node.steps;
    const AdamWConfig critic = config_.CriticAdam(), actor = config_.ActorAdam();
    AdamWStep(node.critic.data(), node.grad_critic.data(), node.m_critic.data(), node.v_critic.data(), fc_, node.steps,
              critic);
    // Both actors in one call (same settings and steps; the zero padding stays 0).
    AdamWStep(node.actor.data(), node.grad_actor.data(), node.m_actor.data(), node.v_actor.data(), fa_ * s_, node.steps,
              actor);
  }

  /// Ends a round of updates (one mini-batch of every node): counts it and,
  /// every consensus_period rounds, averages the critics. True if it did.
  bool CompleteRound() {
    ++num_updates_;
    const std::uint32_t p = config_.consensus_period;
    if (p == 0 || num_updates_ % p != 0) return false;
    Consensus();
    return true;
  }

  /// θ_i <- (1/N) Σ_j θ_j for every node (Algorithm 1); actors and optimizer states untouched.
  void Consensus() { AverageCritics(nodes_, fc_, phi_c_.data()); }

 private:
  static std::size_t CheckedNodes(std::size_t n) {
    if (n < 1 || n > kMaxNodes)
      throw std::invalid_argument("num_nodes: must be in [1, " + std::to_string(kMaxNodes) + "], got " +
                                  std::to_string(n));
    return n;
  }
  std::size_t CheckedNode(std::size_t i) const {
    if (i >= n_)
      throw std::invalid_argument("node: must be in [0, " + std::to_string(n_ - 1) + "], got " + std::to_string(i));
    return i;
  }

  void CriticFeatures(const float* x, float* out) {
    runtime::Features(config_.critic_basis, x, n_, rank_table_.data(), rank_.data(), out);
  }

  DCGYM_CLONES static float Dot(const float* a, const float* b, std::size_t f) {
    float acc[16] = {};
    std::size_t c = 0;
    for (; c + 16 <= f; c += 16)
      for (std::size_t k = 0; k < 16; ++k) acc[k] += a[c + k] * b[c + k];
    float tail = 0.0f;
    for (; c < f; ++c) tail += a[c] * b[c];
    for (std::size_t k = 0; k < 8; ++k) acc[k] += acc[k + 8];
    for (std::size_t k = 0; k < 4; ++k) acc[k] += acc[k + 4];
    return (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail;
  }

  DCGYM_CLONES static void Axpy(float* y, const float* x, std::size_t f, float a) {
    for (std::size_t c = 0; c < f; ++c) y[c] += a * x[c];
  }

  static void Scale(float* y, std::size_t f, float a) {
    for (std::size_t c = 0; c < f; ++c) y[c] *= a;
  }

  /// One actor's per-row coefficients a_s = c̃_s - Σc̃_s π_s times β_s (gradient,
  /// into coef_) and w_s (trace, into coef_trace_), at columns [off, off + N)
  /// of the packed rows; `pi` is D x S.
  void ActorCoefficients(const float* counts, const float* pi, std::size_t d, float inv_d, bool code, std::size_t off) {
    const std::size_t n = n_;
    for (std::size_t s = 0; s < d; ++s) {
      const float* c = counts + s * n;
      const float* p = pi + s * s_ + off;
      float total = 0.0f;
      for (std::size_t j = 0; j < n; ++j) total += c[j];
      // a_s = c̃ - Σc̃ π: paper c̃ = c; code c̃ = c / Σc (and a_s = 0 with no decision)
      float* g = coef_.data() + s * s_ + off;
      float* e = coef_trace_.data() + s * s_ + off;
      const float kb = static_cast<float>(beta_[s]) * inv_d;
      const float kw = static_cast<float>(last_w_[s]);
      if (code && total <= 0.0f) {
        for (std::size_t j = 0; j < n; ++j) g[j] = e[j] = 0.0f;
        continue;
      }
      const float inv_total = code ? 1.0f / total : 1.0f;
      const float mass = code ? 1.0f : total;
      for (std::size_t j = 0; j < n; ++j) {
        const float a = c[j] * inv_total - mass * p[j];
        g[j] = kb * a;
        e[j] = kw * a;
      }
    }
  }

  std::size_t n_;
  LearnerConfig config_;
  std::size_t fc_, fa_, s_;
  ActorPolicy policy_;
  std::vector<Node> nodes_;
  std::uint64_t num_updates_ = 0;
  std::size_t capacity_ = 0;
  std::vector<float> rank_table_;
  std::vector<std::uint32_t> rank_;
  // scratch
  std::vector<float> value_, next_value_, phi_c_, phi_a_, coef_, coef_trace_;
  AlignedVector<float> pi_;
  std::vector<double> delta_, beta_, last_w_;
};

}  // namespace dcgym::runtime
