// The policy file (docs/policy_format.md): loading, full validation and
// evaluation of an exported policy, with nothing but the C++17 standard
// library. This is the deployment header: `#include <dcgym/runtime/policy_file.hpp>`
// with `-I cpp_core/include` is all a program needs (cpp_core/examples/deploy_dispatch.cpp).
//
//   dcgym::runtime::Policy policy;
//   std::string error;
//   if (!dcgym::runtime::LoadPolicyFile("malcolm.dcpol", &policy, &error)) { print error; exit }
//   auto* pair = policy.linear_pair();                 // nullptr unless the file holds that kind
//   pair->Probabilities(node, raw_loads, migration, stealing);
//   auto* fill = policy.fill();                        // the `fill` kind: water-filling tables with gains
//   fill->Levels(raw_loads, levels);                   // (doubles) then
//   fill->Tables(node, levels, arrivals_per_heartbeat, migration, stealing);
//
// Errors: loading never throws a policy error and never reads out of bounds;
// ParsePolicy / LoadPolicyFile return false and set `*error` to one line
// "<field>: got <value>; expected <what>" naming the first bad field (only
// std::bad_alloc can escape, as from any standard container). Every size is
// checked against the bytes actually present before anything is allocated,
// so a file cannot make the loader allocate more than about its own size
// (a row-wise mlp's output scratch excepted: its rows, at most 65536, times
// the outputs of its last layer).
//
// Evaluation (Probabilities, Value, Act) works in preallocated scratch: it
// never allocates, throws or locks, and it is not thread-safe (give each
// thread its own Policy; copies are independent).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dcgym/runtime/fill.hpp"
#include "dcgym/runtime/linear.hpp"
#include "dcgym/runtime/mlp.hpp"

namespace dcgym::runtime {

// ------------------------------------------------------------------ format constants

inline constexpr char kPolicyMagic[8] = {'D', 'C', 'G', 'Y', 'M', 'P', 'O', 'L'};
inline constexpr std::uint32_t kPolicyVersion = 6;  // the newest version; every version from 1 up is read
inline constexpr std::uint32_t kMinPolicyVersion = 1;
inline constexpr std::uint32_t kSettingsVersion = 3;     // the version that added the settings section
inline constexpr std::uint32_t kFillVersion = 4;         // the version that added the fill kind
inline constexpr std::uint32_t kRowsVersion = 5;         // the version that added the mlp kind's row layout
inline constexpr std::uint32_t kPerTaskVersion = 6;      // the version that added the fill kind's per_task rule
inline constexpr std::size_t kHeaderSize = 32;           // magic, version, kind, num_agents, flags, body_size
inline constexpr std::size_t kChecksumSize = 4;          // CRC32 after the body
inline constexpr std::uint32_t kNoCritic = 0xFFFFFFFFu;  // linear_pair's critic_basis without a critic

// Limits a valid file stays within (they keep every size computation far from overflow).
inline constexpr std::uint32_t kMaxAgents = 1u << 16;
inline constexpr std::uint32_t kMaxLoads = 1u << 16;  // N of the linear kinds
inline constexpr std::uint32_t kMaxWidth = 1u << 24;  // an MLP's input size and layer widths
inline constexpr std::uint32_t kMaxLayers = 64;
inline constexpr std::uint32_t kMaxRows = 1u << 16;   // rows of a row-wise mlp (its output scratch grows with them)
inline constexpr std::uint32_t kMaxFillNodes = 4096;  // N of the fill kind (its gains grow as N^2)
inline constexpr std::uint32_t kMaxSettingsSize = 1u << 16;  // bytes of the settings section's text
inline constexpr std::size_t kMaxSettingKey = 64;
inline constexpr std::size_t kMaxSettingValue = 1024;
// The largest magnitude of a weight or bias: beyond it float32 evaluation overflows to inf and NaN
// (a file of ±3e38 weights would otherwise load and act on NaN); no trained policy comes near it.
inline constexpr float kMaxParameter = 1e6f;

/// What a policy file holds, with the numbers its header stores.
enum class PolicyKind : std::uint32_t {
  kLinearPair = 1,   // Malcolm: per node, linear softmax migration and stealing actors (+ optional linear critic)
  kMlp = 2,          // dense networks with per-layer activations and an output head
  kLinearValue = 3,  // a linear value function per agent
  kFill = 4,         // Malcolm: per node, water-filling tables adjusted by linear gains (runtime/fill.hpp)
};

inline constexpr std::string_view PolicyKindName(PolicyKind k) {
  switch (k) {
    case PolicyKind::kLinearPair: return "linear_pair";
    case PolicyKind::kMlp: return "mlp";
    case PolicyKind::kLinearValue: return "linear_value";
    case PolicyKind::kFill: return "fill";
  }
  return "?";
}

/// CRC-32 (IEEE 802.3, zlib.crc32's) of `size` bytes, continuing from `crc`.
inline std::uint32_t Crc32(const unsigned char* data, std::size_t size, std::uint32_t crc = 0) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

// ------------------------------------------------------------------ linear policies

/// The input of the linear kinds: N raw loads -> Normaliser -> basis features.
/// Owns the scratch the feature map needs.
class LinearInput {
 public:
  LinearInput() = default;
  LinearInput(std::size_t num_loads, Basis basis, Normaliser normaliser)
      : n_(num_loads), basis_(basis), normaliser_(normaliser), x_(num_loads), rank_(num_loads), rank_table_(num_loads) {
    RankFeatureTable(num_loads, rank_table_.data());
  }

  std::size_t num_loads() const { return n_; }
  Basis basis() const { return basis_; }
  const Normaliser& normaliser() const { return normaliser_; }

  /// x = normaliser(raw) into the scratch; returns x (num_loads() floats).
  const float* Normalise(const float* raw) {
    for (std::size_t i = 0; i < n_; ++i) x_[i] = normaliser_(raw[i]);
    return x_.data();
  }

  /// φ_b(x) of the last Normalise()d loads into `phi` (NumFeatures(b, N) floats).
  void Features(Basis b, float* phi) { runtime::Features(b, x_.data(), n_, rank_table_.data(), rank_.data(), phi); }

 private:
  std::size_t n_ = 0;
  Basis basis_ = Basis::kRaw;
  Normaliser normaliser_;
  std::vector<float> x_;
  std::vector<std::uint32_t> rank_;
  std::vector<float> rank_table_;
};

/// Malcolm's rack policy: for every node i, migration and stealing actors
/// softmax(W φ_a(x)) (one row per destination node) and optionally a critic
/// <φ_c(x), θ>, x = the node's N loads normalised.
class LinearPairPolicy {
 public:
  LinearPairPolicy() = default;
  /// `migration` and `stealing` hold N x N x F_a floats (node, destination, feature),
  /// `critic` N x F_c (empty without a critic).
  LinearPairPolicy(LinearInput input, Basis critic_basis, bool has_critic, float max_logit,
                   std::vector<float> migration, std::vector<float> stealing, std::vector<float> critic)
      : input_(std::move(input)),
        critic_basis_(critic_basis),
        has_critic_(has_critic),
        max_logit_(max_logit),
        num_features_(NumFeatures(input_.basis(), input_.num_loads())),
        num_critic_features_(has_critic ? NumFeatures(critic_basis, input_.num_loads()) : 0),
        migration_(std::move(migration)),
        stealing_(std::move(stealing)),
        critic_(std::move(critic)),
        phi_(num_features_ > num_critic_features_ ? num_features_ : num_critic_features_) {}

  std::size_t num_nodes() const { return input_.num_loads(); }
  std::size_t num_features() const { return num_features_; }                // F_a
  std::size_t num_critic_features() const { return num_critic_features_; }  // F_c, 0 without a critic
  Basis actor_basis() const { return input_.basis(); }
  Basis critic_basis() const { return critic_basis_; }
  bool has_critic() const { return has_critic_; }
  float max_logit() const { return max_logit_; }
  const Normaliser& normaliser() const { return input_.normaliser(); }
  /// Node `node`'s migration weights, N rows (destinations) of F_a floats.
  const float* migration_weights(std::size_t node) const {
    return migration_.data() + node * num_nodes() * num_features_;
  }
  const float* stealing_weights(std::size_t node) const {
    return stealing_.data() + node * num_nodes() * num_features_;
  }
  const float* critic_weights(std::size_t node) const { return critic_.data() + node * num_critic_features_; }

  /// Node `node`'s migration and stealing distributions over the N nodes for
  /// the loads it sees (`raw_loads`, N floats in the engine's units, finite):
  /// softmax of the logits, each half first centred and clipped to
  /// ±max_logit when max_logit > 0 (as rack_v0 applies its action).
  /// Preconditions: node < num_nodes(); `migration` and `stealing` hold N floats each.
  void Probabilities(std::size_t node, const float* raw_loads, float* migration, float* stealing) {
    const std::size_t n = num_nodes();
    input_.Normalise(raw_loads);
    input_.Features(input_.basis(), phi_.data());
    Linear(migration_weights(node), n, num_features_, phi_.data(), migration);
    Linear(stealing_weights(node), n, num_features_, phi_.data(), stealing);
    Distribution(migration);
    Distribution(stealing);
  }

  /// Node `node`'s critic value V(x) for `raw_loads`; NaN without a critic. Precondition: node < num_nodes().
  float Value(std::size_t node, const float* raw_loads) {
    if (!has_critic_) return std::numeric_limits<float>::quiet_NaN();
    input_.Normalise(raw_loads);
    input_.Features(critic_basis_, phi_.data());
    float v;
    Linear(critic_weights(node), 1, num_critic_features_, phi_.data(), &v);
    return v;
  }

 private:
  /// Logits -> probabilities in place: centre and clip (when max_logit > 0), softmax.
  void Distribution(float* z) const {
    const std::size_t n = num_nodes();
    if (max_logit_ > 0.0f) {
      float lo = z[0], hi = z[0];
      for (std::size_t i = 1; i < n; ++i) {
        lo = z[i] < lo ? z[i] : lo;
        hi = z[i] > hi ? z[i] : hi;
      }
      const float mid = 0.5f * (hi + lo);
      for (std::size_t i = 0; i < n; ++i) {
        const float c = z[i] - mid;
        z[i] = c < -max_logit_ ? -max_logit_ : (c > max_logit_ ? max_logit_ : c);
      }
    }
    Softmax(z, n);
  }

  LinearInput input_;
  Basis critic_basis_ = Basis::kCustomized;
  bool has_critic_ = false;
  float max_logit_ = 0.0f;
  std::size_t num_features_ = 0;
  std::size_t num_critic_features_ = 0;
  std::vector<float> migration_;
  std::vector<float> stealing_;
  std::vector<float> critic_;
  std::vector<float> phi_;  // scratch: the features
};

/// A linear value function per agent: V_a(x) = <φ(x), θ_a>.
class LinearValuePolicy {
 public:
  LinearValuePolicy() = default;
  /// `weights` holds num_agents x F floats.
  LinearValuePolicy(LinearInput input, std::size_t num_agents, std::vector<float> weights)
      : input_(std::move(input)),
        num_agents_(num_agents),
        num_features_(NumFeatures(input_.basis(), input_.num_loads())),
        weights_(std::move(weights)),
        phi_(num_features_) {}

  std::size_t num_agents() const { return num_agents_; }
  std::size_t num_loads() const { return input_.num_loads(); }
  std::size_t num_features() const { return num_features_; }
  Basis basis() const { return input_.basis(); }
  const Normaliser& normaliser() const { return input_.normaliser(); }
  const float* weights(std::size_t agent) const { return weights_.data() + agent * num_features_; }

  /// Agent `agent`'s value for `raw_loads` (N floats). Precondition: agent < num_agents().
  float Value(std::size_t agent, const float* raw_loads) {
    input_.Normalise(raw_loads);
    input_.Features(input_.basis(), phi_.data());
    float v;
    Linear(weights(agent), 1, num_features_, phi_.data(), &v);
    return v;
  }

 private:
  LinearInput input_;
  std::size_t num_agents_ = 0;
  std::size_t num_features_ = 0;
  std::vector<float> weights_;
  std::vector<float> phi_;
};

/// A setting the policy was trained under (format version 3): its name and its value, as text.
using Setting = std::pair<std::string, std::string>;

/// A loaded policy file: its kind, the policy of that kind and the settings it was trained under.
class Policy {
 public:
  PolicyKind kind() const { return kind_; }
  std::size_t num_agents() const { return num_agents_; }
  /// The file's settings in file order (empty for files before version 3).
  const std::vector<Setting>& settings() const { return settings_; }
  /// The value of setting `key`, or nullptr if the file does not have it.
  const std::string* setting(std::string_view key) const {
    for (const auto& [k, v] : settings_) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  /// The policy of the file's kind; nullptr for the other kinds (and before a successful load).
  LinearPairPolicy* linear_pair() { return std::get_if<LinearPairPolicy>(&policy_); }
  MlpPolicy* mlp() { return std::get_if<MlpPolicy>(&policy_); }
  LinearValuePolicy* linear_value() { return std::get_if<LinearValuePolicy>(&policy_); }
  FillPolicy* fill() { return std::get_if<FillPolicy>(&policy_); }

 private:
  friend bool ParsePolicy(const void* data, std::size_t size, Policy* policy, std::string* error);
  PolicyKind kind_ = PolicyKind::kLinearPair;
  std::size_t num_agents_ = 0;
  std::vector<Setting> settings_;
  std::variant<std::monostate, LinearPairPolicy, MlpPolicy, LinearValuePolicy, FillPolicy> policy_;
};

// ------------------------------------------------------------------ parsing

namespace detail {

inline std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

inline std::string Hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(v));
  return buf;
}

inline std::string Index(const std::string& name, std::size_t i) { return name + "[" + std::to_string(i) + "]"; }

/// A bounds-checked little-endian cursor over the file that keeps the first error.
class Reader {
 public:
  Reader(const unsigned char* data, std::size_t size, std::string* error) : p_(data), size_(size), error_(error) {}

  bool ok() const { return ok_; }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return size_ - pos_; }

  /// Record `message` (the first one wins) and return false.
  bool Fail(const std::string& message) {
    if (ok_) *error_ = message;
    ok_ = false;
    return false;
  }
  /// A "<field>: got <got>; expected <expected>" failure.
  bool Fail(const std::string& field, const std::string& got, const std::string& expected) {
    return Fail(field + ": got " + got + "; expected " + expected);
  }

  /// Whether `bytes` more bytes are there before `end` (the checksum); fails naming `field` otherwise.
  bool Need(std::uint64_t bytes, std::size_t end, const std::string& field) {
    if (!ok_) return false;
    if (bytes <= end - pos_) return true;
    return Fail(field + ": needs " + std::to_string(bytes) + " bytes at offset " + std::to_string(pos_) +
                " but the body has " + std::to_string(end - pos_) +
                " left; expected header.body_size to cover "
                "the declared shapes");
  }

  void Skip(std::size_t bytes) { pos_ += bytes; }
  std::uint32_t U32() {
    std::uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | p_[pos_ + k];
    pos_ += 4;
    return v;
  }
  std::uint64_t U64() {
    const std::uint64_t lo = U32();
    const std::uint64_t hi = U32();
    return lo | (hi << 32);
  }
  float F32() {
    const std::uint32_t bits = U32();
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  /// `count` floats, each finite; fails naming the first bad one through `name(i)`.
  template <typename Name>
  bool Floats(std::size_t count, std::vector<float>* out, std::size_t offset, Name name) {
    for (std::size_t i = 0; i < count; ++i) {
      const float v = F32();
      if (!std::isfinite(v)) return Fail(name(i), Num(v), "a finite number");
      (*out)[offset + i] = v;
    }
    return true;
  }
  /// `count` trained parameters (weights, biases): finite and within ±kMaxParameter.
  template <typename Name>
  bool Weights(std::size_t count, std::vector<float>* out, std::size_t offset, Name name) {
    for (std::size_t i = 0; i < count; ++i) {
      const float v = F32();
      if (!std::isfinite(v)) return Fail(name(i), Num(v), "a finite number");
      if (!(std::fabs(v) <= kMaxParameter)) {
        return Fail(name(i), Num(v),
                    "a number within +-" + Num(kMaxParameter) + " (larger ones overflow the float32 evaluation)");
      }
      (*out)[offset + i] = v;
    }
    return true;
  }
  /// The raw bytes [pos, pos + size) (the caller has checked they are there).
  const unsigned char* Bytes(std::size_t size) {
    const unsigned char* at = p_ + pos_;
    pos_ += size;
    return at;
  }

 private:
  const unsigned char* p_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::string* error_;
  bool ok_ = true;
};

/// The linear kinds' input specification (24 bytes).
inline bool ReadInput(Reader& r, std::size_t end, LinearInput* input) {
  if (!r.Need(24, end, "input")) return false;
  const std::uint32_t n = r.U32();
  if (n < 1 || n > kMaxLoads) return r.Fail("input.num_loads", std::to_string(n), "1 .. " + std::to_string(kMaxLoads));
  const std::uint32_t basis = r.U32();
  if (basis >= kNumBases) {
    return r.Fail("input.basis", std::to_string(basis), "0 .. 3 (raw, sort, customized, quadratic)");
  }
  Normaliser norm;
  const char* names[4] = {"input.scale", "input.offset", "input.lo", "input.hi"};
  float* fields[4] = {&norm.scale, &norm.offset, &norm.lo, &norm.hi};
  for (int k = 0; k < 4; ++k) {
    *fields[k] = r.F32();
    if (!std::isfinite(*fields[k])) return r.Fail(names[k], Num(*fields[k]), "a finite number");
  }
  if (!(norm.lo <= norm.hi)) return r.Fail("input.hi", Num(norm.hi), "at least input.lo (" + Num(norm.lo) + ")");
  *input = LinearInput(n, static_cast<Basis>(basis), norm);
  return true;
}

/// The body size the linear kinds' shapes need: `fixed` bytes + agents x per_agent floats.
inline bool CheckBodySize(Reader& r, std::uint64_t body_size, std::uint64_t fixed, std::uint64_t agents,
                          std::uint64_t per_agent, const std::string& shapes) {
  const std::uint64_t expected = fixed + agents * per_agent * 4;  // < 2^16 * 2^35 * 4: no overflow
  if (body_size == expected) return true;
  return r.Fail("header.body_size", std::to_string(body_size), std::to_string(expected) + " for " + shapes);
}

inline bool ParseLinearPair(Reader& r, std::size_t end, std::uint64_t body_size, std::uint32_t agents,
                            LinearPairPolicy* out) {
  LinearInput input;
  if (!ReadInput(r, end, &input) || !r.Need(8, end, "critic_basis")) return false;
  const std::size_t n = input.num_loads();
  const std::uint32_t critic = r.U32();
  if (critic >= kNumBases && critic != kNoCritic) {
    return r.Fail("critic_basis", std::to_string(critic),
                  "0 .. 3 (raw, sort, customized, quadratic) or 4294967295 (none)");
  }
  const float max_logit = r.F32();
  if (!(std::isfinite(max_logit) && max_logit >= 0.0f)) {
    return r.Fail("max_logit", Num(max_logit), "a finite number >= 0 (0: no clip)");
  }
  if (agents != n) {
    return r.Fail("header.num_agents", std::to_string(agents),
                  std::to_string(n) + " (input.num_loads: one actor pair per node)");
  }
  const bool has_critic = critic != kNoCritic;
  const Basis critic_basis = has_critic ? static_cast<Basis>(critic) : Basis::kCustomized;
  const std::size_t fa = NumFeatures(input.basis(), n);
  const std::size_t fc = has_critic ? NumFeatures(critic_basis, n) : 0;
  const std::string shapes =
      std::to_string(n) + " nodes, actor basis " + std::string(BasisName(input.basis())) + " (" + std::to_string(fa) +
      " features), " +
      (has_critic ? "critic basis " + std::string(BasisName(critic_basis)) + " (" + std::to_string(fc) + " features)"
                  : std::string("no critic"));
  if (!CheckBodySize(r, body_size, 32, agents, 2 * n * fa + fc, shapes)) return false;
  std::vector<float> migration(n * n * fa), stealing(n * n * fa), critic_w(n * fc);
  for (std::size_t node = 0; node < n; ++node) {
    const std::string who = Index("node", node);
    for (auto [name, w] : {std::pair<const char*, std::vector<float>*>{".migration", &migration},
                           std::pair<const char*, std::vector<float>*>{".stealing", &stealing}}) {
      const std::string field = who + name;
      if (!r.Weights(n * fa, w, node * n * fa,
                     [&](std::size_t i) { return Index(field, i / fa) + "[" + std::to_string(i % fa) + "]"; })) {
        return false;
      }
    }
    if (!r.Weights(fc, &critic_w, node * fc, [&](std::size_t i) { return Index(who + ".critic", i); })) return false;
  }
  *out = LinearPairPolicy(std::move(input), critic_basis, has_critic, max_logit, std::move(migration),
                          std::move(stealing), std::move(critic_w));
  return true;
}

inline bool ParseLinearValue(Reader& r, std::size_t end, std::uint64_t body_size, std::uint32_t agents,
                             LinearValuePolicy* out) {
  LinearInput input;
  if (!ReadInput(r, end, &input)) return false;
  const std::size_t f = NumFeatures(input.basis(), input.num_loads());
  const std::string shapes = std::to_string(agents) + " agents, " + std::to_string(input.num_loads()) +
                             " loads, basis " + std::string(BasisName(input.basis())) + " (" + std::to_string(f) +
                             " features)";
  if (!CheckBodySize(r, body_size, 24, agents, f, shapes)) return false;
  std::vector<float> weights(agents * f);
  for (std::size_t a = 0; a < agents; ++a) {
    if (!r.Weights(f, &weights, a * f, [&](std::size_t i) { return Index(Index("agent", a) + ".value", i); })) {
      return false;
    }
  }
  *out = LinearValuePolicy(std::move(input), agents, std::move(weights));
  return true;
}

/// Kind 4: N, the water-filling rule's fields, N capacities, then per node FillRows(N) x kFillFeatures gains.
inline bool ParseFill(Reader& r, std::size_t end, std::uint64_t body_size, std::uint32_t agents, std::uint32_t version,
                      FillPolicy* out) {
  if (!r.Need(24, end, "fill")) return false;
  const std::uint32_t n = r.U32();
  if (n < 1 || n > kMaxFillNodes) {
    return r.Fail("fill.num_nodes", std::to_string(n), "1 .. " + std::to_string(kMaxFillNodes));
  }
  if (agents != n) {
    return r.Fail("header.num_agents", std::to_string(agents), std::to_string(n) + " (fill.num_nodes: one per node)");
  }
  float fields[4];
  const char* names[4] = {"fill.level_scale", "fill.heartbeat_services", "fill.horizon", "fill.mix"};
  for (int k = 0; k < 4; ++k) {
    fields[k] = r.F32();
    const bool ok = k < 3 ? std::isfinite(fields[k]) && fields[k] > 0.0f : fields[k] >= 0.0f && fields[k] <= 1.0f;
    if (!ok) return r.Fail(names[k], Num(fields[k]), k < 3 ? "a finite number > 0" : "a number in [0, 1]");
  }
  const std::uint32_t rules = r.U32();  // bit 0: the steal rule; bit 1 (version 6): per task
  if (rules > (version >= kPerTaskVersion ? 3u : 1u)) {
    return r.Fail("fill.rules", std::to_string(rules),
                  version >= kPerTaskVersion ? "0 .. 3 (bit 0: the steal rule, bit 1: per task)"
                                             : "0 or 1 (the steal rule) in a version-4 or -5 file");
  }
  const std::uint64_t rows = FillRows(n) * kFillFeatures;
  const std::string shapes = std::to_string(n) + " nodes (" + std::to_string(FillRows(n)) + " rows of " +
                             std::to_string(kFillFeatures) + " gains each)";
  if (!CheckBodySize(r, body_size, 24 + 4ull * n, agents, rows, shapes)) return false;
  std::vector<float> capacity(n), weights(n * rows);
  for (std::size_t j = 0; j < n; ++j) {
    const float c = r.F32();
    if (!(std::isfinite(c) && c > 0.0f && c <= kMaxParameter)) {
      return r.Fail(Index("fill.capacity", j), Num(c), "a number in (0, " + Num(kMaxParameter) + "]");
    }
    capacity[j] = c;
  }
  for (std::size_t node = 0; node < n; ++node) {
    const std::string field = Index("node", node) + ".gains";
    if (!r.Weights(rows, &weights, node * rows, [&](std::size_t i) {
          return Index(field, i / kFillFeatures) + "[" + std::to_string(i % kFillFeatures) + "]";
        })) {
      return false;
    }
  }
  *out = FillPolicy(n, fields[0], fields[1], fields[2], fields[3], (rules & 1u) != 0, std::move(capacity),
                    std::move(weights), (rules & 2u) != 0);
  return true;
}

inline bool ParseMlp(Reader& r, std::size_t end, std::uint32_t agents, std::uint32_t version, MlpPolicy* out) {
  if (!r.Need(16, end, "mlp")) return false;
  const std::uint32_t d = r.U32();
  if (d < 1 || d > kMaxWidth) return r.Fail("mlp.num_inputs", std::to_string(d), "1 .. " + std::to_string(kMaxWidth));
  const std::uint32_t m = r.U32();
  if (m < 1 || m > agents) {
    return r.Fail("mlp.num_networks", std::to_string(m), "1 .. " + std::to_string(agents) + " (header.num_agents)");
  }
  const std::uint32_t head_id = r.U32();
  if (head_id >= (version >= 2 ? kNumHeads : kNumHeadsVersion1)) {
    return r.Fail("mlp.head", std::to_string(head_id),
                  version >= 2 ? "0 .. 6 (identity, unsquash, tanh, softmax, argmax, increasing, multi_categorical)"
                               : "0 .. 4 (identity, unsquash, tanh, softmax, argmax) in a version-1 file");
  }
  const Head head = static_cast<Head>(head_id);
  const std::uint32_t k = r.U32();
  if (k < 1 || k > kMaxWidth) return r.Fail("mlp.num_outputs", std::to_string(k), "1 .. " + std::to_string(kMaxWidth));
  RowLayout layout;  // version 5: rows, row_width (rows 0: flat)
  if (version >= kRowsVersion) {
    if (!r.Need(8, end, "mlp.rows")) return false;
    const std::uint32_t rows = r.U32(), row_width = r.U32();
    if (rows > d || rows > kMaxRows) {
      return r.Fail("mlp.rows", std::to_string(rows),
                    "0 .. " + std::to_string(std::min(d, kMaxRows)) + " (at most mlp.num_inputs and " +
                        std::to_string(kMaxRows) + ")");
    }
    if (rows > 0) {
      if (k % rows != 0) {
        return r.Fail("mlp.rows", std::to_string(rows),
                      "a divisor of mlp.num_outputs (" + std::to_string(k) + "): each row has its outputs");
      }
      if (row_width < 1 || std::uint64_t{rows} * row_width > d) {
        return r.Fail("mlp.row_width", std::to_string(row_width),
                      "1 .. " + std::to_string(d / rows) + " (mlp.num_inputs / mlp.rows)");
      }
      layout = {rows, row_width, d - std::size_t{rows} * row_width};
    } else if (row_width != 0) {
      return r.Fail("mlp.row_width", std::to_string(row_width), "0 (a flat network: mlp.rows is 0)");
    }
  }
  // The network's input and output widths: the whole observation and K, or a row with the shared features and
  // K / rows.
  const std::uint32_t net_in = layout.rows ? static_cast<std::uint32_t>(layout.row_width + layout.shared) : d;
  const std::uint32_t net_out = layout.rows ? static_cast<std::uint32_t>(k / layout.rows) : k;

  if (!r.Need(4ull * agents, end, "mlp.agent_network")) return false;
  std::vector<std::uint32_t> agent_network(agents);
  for (std::size_t a = 0; a < agents; ++a) {
    agent_network[a] = r.U32();
    if (agent_network[a] >= m) {
      return r.Fail(Index("mlp.agent_network", a), std::to_string(agent_network[a]),
                    "0 .. " + std::to_string(m - 1) + " (mlp.num_networks - 1)");
    }
  }
  std::vector<float> low, high;
  if (HeadHasBounds(head)) {
    if (!r.Need(8ull * k, end, "mlp.low")) return false;
    low.resize(k);
    high.resize(k);
    if (!r.Floats(k, &low, 0, [](std::size_t i) { return Index("mlp.low", i); }) ||
        !r.Floats(k, &high, 0, [](std::size_t i) { return Index("mlp.high", i); })) {
      return false;
    }
    for (std::size_t i = 0; i < k; ++i) {
      if (!(low[i] <= high[i])) {
        return r.Fail(Index("mlp.high", i), Num(high[i]),
                      "at least mlp.low[" + std::to_string(i) + "] (" + Num(low[i]) + ")");
      }
    }
    if (head == Head::kIncreasing) {  // one range [low, high] with 0 < low: thresholds in log space
      for (std::size_t i = 0; i < k; ++i) {
        if (!(low[i] > 0.0f)) return r.Fail(Index("mlp.low", i), Num(low[i]), "> 0 (the increasing head's range)");
        if (low[i] != low[0]) {
          return r.Fail(Index("mlp.low", i), Num(low[i]), "mlp.low[0] (" + Num(low[0]) + "): one range for all");
        }
        if (high[i] != high[0]) {
          return r.Fail(Index("mlp.high", i), Num(high[i]), "mlp.high[0] (" + Num(high[0]) + "): one range for all");
        }
      }
    }
  }
  std::vector<std::uint32_t> groups;
  if (head == Head::kMultiCategorical) {
    if (!r.Need(4, end, "mlp.num_groups")) return false;
    const std::uint32_t g = r.U32();
    if (g < 1 || g > k) return r.Fail("mlp.num_groups", std::to_string(g), "1 .. " + std::to_string(k));
    if (!r.Need(4ull * g, end, "mlp.groups")) return false;
    groups.resize(g);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < g; ++i) {
      groups[i] = r.U32();
      if (groups[i] < 1 || groups[i] > k) {
        return r.Fail(Index("mlp.groups", i), std::to_string(groups[i]), "1 .. " + std::to_string(k));
      }
      total += groups[i];
    }
    if (total != k) {
      return r.Fail("mlp.groups", "sizes summing to " + std::to_string(total),
                    std::to_string(k) + " (mlp.num_outputs)");
    }
  }

  std::vector<Network> networks(m);
  for (std::size_t net = 0; net < m; ++net) {
    const std::string who = Index("network", net);
    if (!r.Need(4, end, who + ".num_layers")) return false;
    const std::uint32_t num_layers = r.U32();
    if (num_layers < 1 || num_layers > kMaxLayers) {
      return r.Fail(who + ".num_layers", std::to_string(num_layers), "1 .. " + std::to_string(kMaxLayers));
    }
    std::uint32_t width = net_in;
    for (std::size_t l = 0; l < num_layers; ++l) {
      const std::string layer = who + Index(".layer", l);
      if (!r.Need(12, end, layer)) return false;
      const std::uint32_t in = r.U32(), outw = r.U32(), act = r.U32();
      if (in != width) {
        const char* what = l > 0         ? " (the previous layer's out)"
                           : layout.rows ? " (mlp.row_width + the shared inputs)"
                                         : " (mlp.num_inputs)";
        return r.Fail(layer + ".in", std::to_string(in), std::to_string(width) + what);
      }
      const bool last = l + 1 == num_layers;
      if (last ? outw != net_out : (outw < 1 || outw > kMaxWidth)) {
        return r.Fail(
            layer + ".out", std::to_string(outw),
            last ? std::to_string(net_out) + (layout.rows ? " (mlp.num_outputs / mlp.rows)" : " (mlp.num_outputs)")
                 : "1 .. " + std::to_string(kMaxWidth));
      }
      if (act >= kNumActivations) {
        return r.Fail(layer + ".activation", std::to_string(act), "0 .. 5 (identity, relu, tanh, sigmoid, elu, silu)");
      }
      const std::uint64_t count = std::uint64_t{in} * outw + outw;  // < 2^49
      if (!r.Need(4 * count, end, layer + ".weight")) return false;
      DenseLayer dense;
      dense.in = in;
      dense.out = outw;
      dense.activation = static_cast<Activation>(act);
      dense.weight.resize(std::size_t{in} * outw);
      dense.bias.resize(outw);
      const std::string wname = layer + ".weight", bname = layer + ".bias";
      if (!r.Weights(dense.weight.size(), &dense.weight, 0,
                     [&](std::size_t i) { return Index(wname, i / in) + "[" + std::to_string(i % in) + "]"; }) ||
          !r.Weights(outw, &dense.bias, 0, [&](std::size_t i) { return Index(bname, i); })) {
        return false;
      }
      networks[net].layers.push_back(std::move(dense));
      width = outw;
    }
  }
  if (r.pos() != end) {
    return r.Fail("header.body_size", std::to_string(end - kHeaderSize),
                  std::to_string(r.pos() - kHeaderSize) + " (the declared networks end there)");
  }
  *out = MlpPolicy(d, std::move(networks), std::move(agent_network), head, std::move(low), std::move(high),
                   std::move(groups), layout);
  return true;
}

/// The settings section (version 3): u32 size, then `size` bytes of "key=value\n" lines.
inline bool ParseSettings(Reader& r, std::size_t end, std::vector<Setting>* out) {
  if (!r.Need(4, end, "settings.size")) return false;
  const std::uint32_t size = r.U32();
  if (size > kMaxSettingsSize) {
    return r.Fail("settings.size", std::to_string(size), "at most " + std::to_string(kMaxSettingsSize));
  }
  if (!r.Need(size, end, "settings")) return false;
  const char* text = reinterpret_cast<const char*>(r.Bytes(size));
  if (size > 0 && text[size - 1] != '\n') {
    return r.Fail("settings", "a last line without a newline", "key=value lines, each ending in one");
  }
  std::size_t line_start = 0;
  for (std::size_t line = 0; line_start < size; ++line) {
    const std::size_t stop = static_cast<std::size_t>(std::find(text + line_start, text + size, '\n') -
                                                      text);  // there is one: the text ends in '\n'
    const std::string_view item(text + line_start, stop - line_start);
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq == std::string_view::npos ? 0 : eq);
    bool key_ok = !key.empty() && key.size() <= kMaxSettingKey && key[0] >= 'a' && key[0] <= 'z';
    for (char ch : key) key_ok = key_ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
    for (const auto& seen : *out) key_ok = key_ok && seen.first != key;
    if (!key_ok) {
      std::string shown;
      for (char ch : item.substr(0, 80)) shown += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
      return r.Fail("settings line " + std::to_string(line), "\"" + shown + "\"",
                    "a new key=value, key [a-z][a-z0-9_]{0,63}");
    }
    const std::string_view value = item.substr(eq + 1);
    bool value_ok = !value.empty() && value.size() <= kMaxSettingValue;
    for (char ch : value) value_ok = value_ok && ch > 0x20 && ch < 0x7f;
    if (!value_ok) {
      return r.Fail("settings." + std::string(key), std::to_string(value.size()) + " bytes of value",
                    "1 to 1024 printable ASCII characters, no spaces");
    }
    out->emplace_back(std::string(key), std::string(value));
    line_start = stop + 1;
  }
  return true;
}

}  // namespace detail

/// Parse and validate a policy file held in `data[0 .. size)` into `*policy`.
/// Returns true on success; false with `*error` set (and `*policy` untouched) otherwise.
inline bool ParsePolicy(const void* data, std::size_t size, Policy* policy, std::string* error) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  detail::Reader r(bytes, size, error);
  constexpr std::size_t kMinSize = kHeaderSize + kChecksumSize;
  if (size < 8 || std::memcmp(bytes, kPolicyMagic, 8) != 0) {
    if (size < 8) {
      return r.Fail("file size", std::to_string(size) + " bytes", "at least " + std::to_string(kMinSize));
    }
    std::string got;
    for (std::size_t i = 0; i < 8; ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
      got += (i ? " " : "") + std::string(hex);
    }
    return r.Fail("header.magic", got, "44 43 47 59 4d 50 4f 4c (\"DCGYMPOL\"): not a dcgym policy file");
  }
  if (size < kMinSize) {
    return r.Fail("file size", std::to_string(size) + " bytes", "at least " + std::to_string(kMinSize));
  }
  r.Skip(8);  // the magic, checked above
  const std::uint32_t version = r.U32();
  if (version < kMinPolicyVersion || version > kPolicyVersion) {
    return r.Fail("header.version", std::to_string(version),
                  std::to_string(kMinPolicyVersion) + " .. " + std::to_string(kPolicyVersion) +
                      " (the versions this reader reads)");
  }
  const std::uint32_t kind = r.U32();
  const std::uint32_t agents = r.U32();
  const std::uint32_t flags = r.U32();
  const std::uint64_t body_size = r.U64();
  if (body_size != size - kMinSize) {
    const std::string expected = body_size > size - kMinSize ? std::to_string(body_size) +
                                                                   " + 36 (header.body_size + header and checksum): "
                                                                   "the file is truncated"
                                                             : "header.body_size (" + std::to_string(body_size) +
                                                                   ") + 36: there are bytes after the checksum";
    return r.Fail("file size", std::to_string(size) + " bytes", expected);
  }
  const std::size_t end = size - kChecksumSize;
  const std::uint32_t stored = detail::Reader(bytes + end, 4, error).U32();
  const std::uint32_t computed = Crc32(bytes, end);
  if (stored != computed) {
    return r.Fail("checksum", detail::Hex32(stored),
                  detail::Hex32(computed) + " (the CRC32 of the bytes before it): the file is corrupted");
  }
  if (kind < 1 || kind > 4 || (kind == 4 && version < kFillVersion)) {
    return r.Fail("header.kind", std::to_string(kind),
                  version < kFillVersion
                      ? "1 .. 3 (linear_pair, mlp, linear_value) in a version-" + std::to_string(version) + " file"
                      : std::string("1 .. 4 (linear_pair, mlp, linear_value, fill)"));
  }
  if (agents < 1 || agents > kMaxAgents) {
    return r.Fail("header.num_agents", std::to_string(agents), "1 .. " + std::to_string(kMaxAgents));
  }
  if (flags != 0) return r.Fail("header.flags", std::to_string(flags), "0 (no flags are defined)");

  Policy loaded;
  loaded.kind_ = static_cast<PolicyKind>(kind);
  loaded.num_agents_ = agents;
  if (version >= kSettingsVersion && !detail::ParseSettings(r, end, &loaded.settings_)) return false;
  const std::uint64_t kind_body = end - r.pos();  // the body after the settings section: the kind's own fields
  bool ok = false;
  switch (loaded.kind_) {
    case PolicyKind::kLinearPair:
      ok = detail::ParseLinearPair(r, end, kind_body, agents, &loaded.policy_.emplace<LinearPairPolicy>());
      break;
    case PolicyKind::kMlp: ok = detail::ParseMlp(r, end, agents, version, &loaded.policy_.emplace<MlpPolicy>()); break;
    case PolicyKind::kLinearValue:
      ok = detail::ParseLinearValue(r, end, kind_body, agents, &loaded.policy_.emplace<LinearValuePolicy>());
      break;
    case PolicyKind::kFill:
      ok = detail::ParseFill(r, end, kind_body, agents, version, &loaded.policy_.emplace<FillPolicy>());
      break;
  }
  if (!ok) return false;
  *policy = std::move(loaded);
  return true;
}

/// ParsePolicy on the contents of the file at `path`; a file that cannot be read is an error too.
inline bool LoadPolicyFile(const std::string& path, Policy* policy, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open the policy file";
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = path + ": cannot read the policy file";
    return false;
  }
  return ParsePolicy(bytes.data(), bytes.size(), policy, error);
}

}  // namespace dcgym::runtime
