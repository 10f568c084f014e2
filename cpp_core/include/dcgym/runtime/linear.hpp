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
#include <cstring>
#include <new>
#include <string_view>
#include <type_traits>
#include <vector>

// The hot loops are compiled for AVX-512, AVX2 + FMA and the baseline and the
// best is picked at load time (GCC's target_clones: an ifunc, x86-64 Linux);
// elsewhere, or with DCGYM_NO_CLONES defined, they are plain portable code.
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && !defined(DCGYM_NO_CLONES)
#define DCGYM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DCGYM_CLONES
#endif

namespace dcgym::runtime {

#if defined(__GNUC__)
// 16-float vectors (GCC / Clang vector extensions): the clones turn them into
// one AVX-512, two AVX or four SSE registers. Passed between inlined helpers
// only, so the ABI note about 64-byte vectors does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
namespace detail {
typedef float Vec16 __attribute__((vector_size(64)));
typedef std::int32_t IVec16 __attribute__((vector_size(64)));
typedef float Vec8 __attribute__((vector_size(32)));
__attribute__((always_inline)) inline Vec8 LoadV8(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// (v0 + v4) + (v2 + v6) + ((v1 + v5) + (v3 + v7)): the order of Linear's lanes, vectorised or not.
__attribute__((always_inline)) inline float SumV8(Vec8 v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
__attribute__((always_inline)) inline Vec16 LoadV(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline void StoreV(float* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }
}  // namespace detail
#endif

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
/// node id (rank 0 = most loaded), as torch.argsort(descending, stable):
/// rank_i = #{j < i: x_j >= x_i} + #{j > i: x_j > x_i}. O(n²) comparisons,
/// branch-free and vectorised over blocks of 16 i's: one compare and one
/// subtract per j and block (three compares in the block's own 16 j's), which
/// beats a sort for the rack sizes here (n <= a few hundred).
DCGYM_CLONES inline void DescendingRanks(const float* x, std::size_t n, std::uint32_t* rank) {
#if defined(__GNUC__) && !defined(__clang__)  // scalar-vector compares and vector ?: are GCC extensions
  detail::IVec16 lane;
  for (int k = 0; k < 16; ++k) lane[k] = k;
  for (std::size_t i0 = 0; i0 < n; i0 += 16) {
    const std::size_t m = n - i0 < 16 ? n - i0 : 16;
    detail::Vec16 xi;
    if (m == 16) {
      xi = detail::LoadV(x + i0);
    } else {
      for (std::size_t k = 0; k < 16; ++k) xi[k] = x[i0 + (k < m ? k : 0)];
    }
    detail::IVec16 r{};                                    // comparisons are -1 (true) or 0
    for (std::size_t j = 0; j < i0; ++j) r -= x[j] >= xi;  // every lane's i is after j
    for (std::size_t j = 0; j < m; ++j) {  // the block itself: >= for the lanes after j, > for the others
      const float xj = x[i0 + j];
      const detail::IVec16 ge = xj >= xi, gt = xj > xi;
      r -= lane > static_cast<std::int32_t>(j) ? ge : gt;
    }
    for (std::size_t j = i0 + m; j < n; ++j) r -= x[j] > xi;  // every lane's i is before j
    if (m == 16) {
      std::memcpy(rank + i0, &r, sizeof r);
    } else {
      for (std::size_t k = 0; k < m; ++k) rank[i0 + k] = static_cast<std::uint32_t>(r[k]);
    }
  }
#else
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t r = 0;
    for (std::size_t j = 0; j < n; ++j) r += j < i ? x[j] >= x[i] : x[j] > x[i];
    rank[i] = r;
  }
#endif
}

/// φ_b(x) into out[0 .. NumFeatures(b, n)). `rank_table` is RankFeatureTable(n)
/// (used by kSort only); `rank` is scratch of n entries (kSort only).
inline void Features(Basis b, const float* x, std::size_t n, const float* rank_table, std::uint32_t* rank, float* out) {
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
#if defined(__GNUC__)
  // 8-float vectors: one AVX register a row; four rows share each load of phi.
  using detail::LoadV8;
  using detail::SumV8;
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float *w0 = w + r * f, *w1 = w0 + f, *w2 = w1 + f, *w3 = w2 + f;
    detail::Vec8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (std::size_t c = 0; c < body; c += kLanes) {
      const detail::Vec8 p = LoadV8(phi + c);
      a0 += LoadV8(w0 + c) * p;
      a1 += LoadV8(w1 + c) * p;
      a2 += LoadV8(w2 + c) * p;
      a3 += LoadV8(w3 + c) * p;
    }
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
    for (std::size_t c = body; c < f; ++c) {
      t0 += w0[c] * phi[c];
      t1 += w1[c] * phi[c];
      t2 += w2[c] * phi[c];
      t3 += w3[c] * phi[c];
    }
    logits[r] = SumV8(a0) + t0;
    logits[r + 1] = SumV8(a1) + t1;
    logits[r + 2] = SumV8(a2) + t2;
    logits[r + 3] = SumV8(a3) + t3;
  }
  for (; r < rows; ++r) {
    const float* row = w + r * f;
    detail::Vec8 a = {};
    for (std::size_t c = 0; c < body; c += kLanes) a += LoadV8(row + c) * LoadV8(phi + c);
    float t = 0.0f;
    for (std::size_t c = body; c < f; ++c) t += row[c] * phi[c];
    logits[r] = SumV8(a) + t;
  }
#else
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = w + r * f;
    float a[kLanes] = {};
    for (std::size_t c = 0; c < body; c += kLanes)
      for (std::size_t k = 0; k < kLanes; ++k) a[k] += row[c + k] * phi[c + k];
    float t = 0.0f;
    for (std::size_t c = body; c < f; ++c) t += row[c] * phi[c];
    for (std::size_t k = 0; k < 4; ++k) a[k] += a[k + 4];
    logits[r] = ((a[0] + a[2]) + (a[1] + a[3])) + t;
  }
#endif
}

// ------------------------------------------------------- packed weights
//
// The actors' weights as the runtime keeps them: both actors stacked and
// transposed, F rows (one per feature) of S = PackedWidth(N) floats,
// [W_m[:, c] | W_s[:, c] | zeros], S a multiple of 16, rows 64-byte aligned.
// Then W φ is Σ_c φ_c row_c: contiguous rows, no horizontal sums, and the
// logits of both actors come out of one pass over the weights.

inline constexpr std::size_t kPackLanes = 16;

/// The row width of a packed matrix with `outputs` outputs (2N for the two actors).
inline constexpr std::size_t PackedWidth(std::size_t outputs) {
  return (outputs + kPackLanes - 1) / kPackLanes * kPackLanes;
}

/// A std::allocator aligned to 64 bytes (a cache line, an AVX-512 vector).
template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr std::size_t kAlign = 64;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlign))); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(kAlign)); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const {
    return false;
  }
};
template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

#if defined(__GNUC__)
namespace detail {

// NV vectors of 16 outputs, the features summed in P interleaved partial sums
// (NV x P = 8 independent accumulators: enough to hide the FMA latency).
template <int NV, int P>
__attribute__((always_inline)) inline void PackedChunk(const float* w, std::size_t f, std::size_t s, const float* phi,
                                                       float* z) {
  Vec16 acc[P][NV];
  for (int p = 0; p < P; ++p)
    for (int v = 0; v < NV; ++v) acc[p][v] = Vec16{};
  std::size_t c = 0;
  for (; c + P <= f; c += P)
    for (int p = 0; p < P; ++p) {
      const float q = phi[c + p];
      const float* row = w + (c + p) * s;
      for (int v = 0; v < NV; ++v) acc[p][v] += q * LoadV(row + 16 * v);
    }
  for (; c < f; ++c) {
    const float q = phi[c];
    const float* row = w + c * s;
    for (int v = 0; v < NV; ++v) acc[0][v] += q * LoadV(row + 16 * v);
  }
  for (int v = 0; v < NV; ++v) {
    Vec16 t = acc[0][v];
    for (int p = 1; p < P; ++p) t += acc[p][v];
    StoreV(z + 16 * v, t);
  }
}

// out[c, k0 .. k0 + 16 NV) for NC features c at a time: a * out + Σ_r phi[r, c] coef[r, k0 ..].
template <int NV, int NC>
__attribute__((always_inline)) inline void OuterChunk(float* out, std::size_t c0, std::size_t s, float a,
                                                      const float* coef, const float* phi, std::size_t f,
                                                      std::size_t d) {
  Vec16 acc[NC][NV];
  for (int q = 0; q < NC; ++q)
    for (int v = 0; v < NV; ++v) acc[q][v] = a == 0.0f ? Vec16{} : a * LoadV(out + (c0 + q) * s + 16 * v);
  for (std::size_t r = 0; r < d; ++r) {
    const float* cr = coef + r * s;
    Vec16 cv[NV];
    for (int v = 0; v < NV; ++v) cv[v] = LoadV(cr + 16 * v);
    for (int q = 0; q < NC; ++q) {
      const float p = phi[r * f + c0 + q];
      for (int v = 0; v < NV; ++v) acc[q][v] += p * cv[v];
    }
  }
  for (int q = 0; q < NC; ++q)
    for (int v = 0; v < NV; ++v) StoreV(out + (c0 + q) * s + 16 * v, acc[q][v]);
}

// OuterChunk over every feature, 8 / NV features at a time.
template <int NV>
__attribute__((always_inline)) inline void OuterColumns(float* out, std::size_t f, std::size_t s, float a,
                                                        const float* coef, const float* phi, std::size_t d) {
  constexpr int kNC = 8 / NV;
  std::size_t c = 0;
  for (; c + kNC <= f; c += kNC) OuterChunk<NV, kNC>(out, c, s, a, coef, phi, f, d);
  for (; c < f; ++c) OuterChunk<NV, 1>(out, c, s, a, coef, phi, f, d);
}
}  // namespace detail
#endif

/// z[0 .. s) = Σ_{c < f} phi[c] w[c, :] for a packed f x s matrix `w`
/// (s a multiple of kPackLanes): the logits of a packed policy.
DCGYM_CLONES inline void PackedLinear(const float* w, std::size_t f, std::size_t s, const float* phi, float* z) {
#if defined(__GNUC__)
  std::size_t k = 0;
  for (; k + 128 <= s; k += 128) detail::PackedChunk<8, 1>(w + k, f, s, phi, z + k);
  if (k + 64 <= s) {
    detail::PackedChunk<4, 2>(w + k, f, s, phi, z + k);
    k += 64;
  }
  if (k + 32 <= s) {
    detail::PackedChunk<2, 4>(w + k, f, s, phi, z + k);
    k += 32;
  }
  if (k + 16 <= s) detail::PackedChunk<1, 8>(w + k, f, s, phi, z + k);
#else
  for (std::size_t k = 0; k < s; ++k) z[k] = 0.0f;
  for (std::size_t c = 0; c < f; ++c)
    for (std::size_t k = 0; k < s; ++k) z[k] += phi[c] * w[c * s + k];
#endif
}

/// out[c, :] = a * out[c, :] (a == 0: overwrite) + Σ_{r < d} phi[r, c] coef[r, :] for c < f:
/// a sum of d outer products into a packed f x s matrix. `phi` is d x f,
/// `coef` d x s (row-major; s a multiple of kPackLanes).
DCGYM_CLONES inline void PackedOuter(float* out, std::size_t f, std::size_t s, float a, const float* coef,
                                     const float* phi, std::size_t d) {
#if defined(__GNUC__)
  std::size_t k = 0;
  for (; k + 128 <= s; k += 128)
    for (std::size_t c = 0; c < f; ++c) detail::OuterChunk<8, 1>(out + k, c, s, a, coef + k, phi, f, d);
  if (k + 64 <= s) {
    detail::OuterColumns<4>(out + k, f, s, a, coef + k, phi, d);
    k += 64;
  }
  if (k + 32 <= s) {
    detail::OuterColumns<2>(out + k, f, s, a, coef + k, phi, d);
    k += 32;
  }
  if (k + 16 <= s) detail::OuterColumns<1>(out + k, f, s, a, coef + k, phi, d);
#else
  for (std::size_t c = 0; c < f; ++c) {
    float* o = out + c * s;
    for (std::size_t k = 0; k < s; ++k) o[k] = a == 0.0f ? 0.0f : a * o[k];
    for (std::size_t r = 0; r < d; ++r)
      for (std::size_t k = 0; k < s; ++k) o[k] += phi[r * f + c] * coef[r * s + k];
  }
#endif
}

/// Σ p[0, n), 128 floats at a time in 8 independent 16-lane chains (then 16 at a time): one pass
/// over memory with nothing else to do, the floor under any kernel that reads
/// the same floats once (benchmarks/policy_runtime.py).
DCGYM_CLONES inline float StreamSum(const float* p, std::size_t n) {
#if defined(__GNUC__)
  detail::Vec16 acc[8];
  for (int c = 0; c < 8; ++c) acc[c] = detail::Vec16{};
  std::size_t k = 0;
  for (; k + 128 <= n; k += 128)
    for (int c = 0; c < 8; ++c) acc[c] += detail::LoadV(p + k + 16 * c);
  for (; k + 16 <= n; k += 16) acc[0] += detail::LoadV(p + k);
  for (int half = 4; half > 0; half /= 2)  // trees, not chains: the pass, not the sums, is timed
    for (int c = 0; c < half; ++c) acc[c] += acc[c + half];
  float t = 0.0f;
  for (int j = 0; j < 16; ++j) t += acc[0][j];
  for (; k < n; ++k) t += p[k];
  return t;
#else
  float t = 0.0f;
  for (std::size_t k = 0; k < n; ++k) t += p[k];
  return t;
#endif
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
