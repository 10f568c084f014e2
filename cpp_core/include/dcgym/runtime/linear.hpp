// Malcolm's linear policy of one node (POMACS 2022, §6.2) as plain C++:
// the basis functions, the linear critic and the two linear softmax actors.
//
// Dependency-free (the C++17 standard library only) so that it is part of
// the deployment header as well as of the engine. The Python twin is
// agents/malcolm/basis.py and agents/malcolm/malcolm_rl_module.py; the two
// compute the same numbers (tests/runtime/).
//
// The input of everything here is x, the N loads a node sees (its stale view
// of the others, its own load exact), already normalised (see Normaliser).
// Nothing here allocates: callers own every buffer.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

// The hot loops are compiled for AVX-512, AVX2 + FMA and the baseline and the
// best is picked at load time (GCC's target_clones: an ifunc, x86-64 Linux);
// elsewhere, or with DCGYM_NO_CLONES defined, they are plain portable code.
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(DCGYM_NO_CLONES)
#define DCGYM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DCGYM_CLONES
#endif

namespace dcgym::runtime {

/// The feature maps of basis.py, with the numbers the policy file stores.
enum class Basis : std::uint32_t {
  kRaw = 0,         // x_i, bias                                   F = N + 1
  kSort = 1,        // log-rank_i, x_i, bias (§6.2's actor basis)  F = 2N + 1
  kCustomized = 2,  // x, x², x³, x⁴, x_i x_j (i<j), bias (critic) F = N(N+7)/2 + 1
  kQuadratic = 3,   // x, x², x_i x_j (i<j), bias                  F = N(N+3)/2 + 1
};
inline constexpr std::uint32_t kNumBases = 4;

inline constexpr std::string_view BasisName(Basis b) {
  switch (b) {
    case Basis::kRaw: return "raw";
    case Basis::kSort: return "sort";
    case Basis::kCustomized: return "customized";
    case Basis::kQuadratic: return "quadratic";
  }
  return "?";
}

/// The number of features basis `b` makes from `n` loads.
inline constexpr std::size_t NumFeatures(Basis b, std::size_t n) {
  switch (b) {
    case Basis::kRaw: return n + 1;
    case Basis::kSort: return 2 * n + 1;
    case Basis::kCustomized: return n * (n + 7) / 2 + 1;
    case Basis::kQuadratic: return n * (n + 3) / 2 + 1;
  }
  return 0;
}

/// The sort basis's rank feature for every rank 0..n-1:
/// (log(rank + 1) - ½ log n) / (½ log n), 0 when n == 1. `out` has n entries.
inline void RankFeatureTable(std::size_t n, float* out) {
  if (n <= 1) {
    if (n == 1) out[0] = 0.0f;
    return;
  }
  const double half_log_n = 0.5 * std::log(static_cast<double>(n));
  for (std::size_t r = 0; r < n; ++r) {
    out[r] = static_cast<float>((std::log(static_cast<double>(r) + 1.0) - half_log_n) / half_log_n);
  }
}

/// Rank of each load among the loads sorted descending, ties to the lower
/// node id (rank 0 = most loaded), as torch.argsort(descending, stable).
/// O(n²) comparisons, but branch-free over full rows so that they vectorise:
/// faster than a sort for the rack sizes here (n <= a few hundred).
DCGYM_CLONES inline void DescendingRanks(const float* x, std::size_t n, std::uint32_t* rank) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t r = 0;
    const float xi = x[i];
    for (std::size_t j = 0; j < n; ++j) r += (x[j] > xi) | ((x[j] == xi) & (j < i));  // earlier ids win ties
    rank[i] = r;
  }
}

/// φ_b(x) into out[0 .. NumFeatures(b, n)). `rank_table` is RankFeatureTable(n)
/// (used by kSort only); `rank` is scratch of n entries (kSort only).
inline void Features(Basis b, const float* x, std::size_t n, const float* rank_table, std::uint32_t* rank,
                     float* out) {
  std::size_t k = 0;
  switch (b) {
    case Basis::kSort:
      DescendingRanks(x, n, rank);
      for (std::size_t i = 0; i < n; ++i) out[k++] = rank_table[rank[i]];
      for (std::size_t i = 0; i < n; ++i) out[k++] = x[i];
      break;
    case Basis::kRaw:
      for (std::size_t i = 0; i < n; ++i) out[k++] = x[i];
      break;
    case Basis::kCustomized:
    case Basis::kQuadratic: {
      const bool cubic = (b == Basis::kCustomized);
      for (std::size_t i = 0; i < n; ++i) out[k++] = x[i];
      for (std::size_t i = 0; i < n; ++i) out[k++] = x[i] * x[i];
      if (cubic) {
        for (std::size_t i = 0; i < n; ++i) out[k++] = x[i] * x[i] * x[i];
        for (std::size_t i = 0; i < n; ++i) {
          const float x2 = x[i] * x[i];
          out[k++] = x2 * x2;
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) out[k++] = x[i] * x[j];
      }
      break;
    }
  }
  out[k] = 1.0f;  // bias
}

/// logits[r] = <w[r, :], phi> for r < rows; `w` is row-major rows x f.
/// Four rows at a time, each summed in 8 lanes (independent chains that
/// vectorise, with a short scalar tail for the 2N + 1 features of the sort
/// basis; the order of the additions differs from a plain loop).
DCGYM_CLONES inline void Linear(const float* w, std::size_t rows, std::size_t f, const float* phi, float* logits) {
  constexpr std::size_t kLanes = 8;
  const std::size_t body = f - f % kLanes;
  auto reduce = [](float* a) {
    for (std::size_t k = 0; k < 4; ++k) a[k] += a[k + 4];
    return (a[0] + a[2]) + (a[1] + a[3]);
  };
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float *w0 = w + r * f, *w1 = w0 + f, *w2 = w1 + f, *w3 = w2 + f;
    float a0[kLanes] = {}, a1[kLanes] = {}, a2[kLanes] = {}, a3[kLanes] = {};
    for (std::size_t c = 0; c < body; c += kLanes) {
      for (std::size_t k = 0; k < kLanes; ++k) {
        const float p = phi[c + k];
        a0[k] += w0[c + k] * p;
        a1[k] += w1[c + k] * p;
        a2[k] += w2[c + k] * p;
        a3[k] += w3[c + k] * p;
      }
    }
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
    for (std::size_t c = body; c < f; ++c) {
      t0 += w0[c] * phi[c];
      t1 += w1[c] * phi[c];
      t2 += w2[c] * phi[c];
      t3 += w3[c] * phi[c];
    }
    logits[r] = reduce(a0) + t0;
    logits[r + 1] = reduce(a1) + t1;
    logits[r + 2] = reduce(a2) + t2;
    logits[r + 3] = reduce(a3) + t3;
  }
  for (; r < rows; ++r) {
    const float* row = w + r * f;
    float a[kLanes] = {};
    for (std::size_t c = 0; c < body; c += kLanes)
      for (std::size_t k = 0; k < kLanes; ++k) a[k] += row[c + k] * phi[c + k];
    float t = 0.0f;
    for (std::size_t c = body; c < f; ++c) t += row[c] * phi[c];
    logits[r] = reduce(a) + t;
  }
}

/// In place: z -> softmax(z), subtracting the maximum first.
inline void Softmax(float* z, std::size_t n) {
  float m = z[0];
  for (std::size_t i = 1; i < n; ++i) m = z[i] > m ? z[i] : m;
  float total = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    z[i] = std::exp(z[i] - m);
    total += z[i];
  }
  const float inv = 1.0f / total;
  for (std::size_t i = 0; i < n; ++i) z[i] *= inv;
}

/// How raw loads become x: x_i = clip(raw_i * scale + offset, lo, hi).
/// rack_v0 + MalcolmRLModule: scale = load_scale / mean_service_us (load
/// metric expected_wait), offset 0, lo 0, hi = obs_clip * load_scale.
struct Normaliser {
  float scale = 1.0f;
  float offset = 0.0f;
  float lo = 0.0f;
  float hi = 1e30f;
  float operator()(float raw) const {
    const float v = raw * scale + offset;
    return v < lo ? lo : (v > hi ? hi : v);
  }
};

}  // namespace dcgym::runtime
