// One node's probability update of Malcolm's policy over the sort basis, fused
// into one AVX-512 kernel: φ_a(x) (ranks, their log-rank features, the loads,
// the bias), both actors' logits and both softmaxes, with everything but the
// weights in registers. It is the runtime's hot path (Malcolm's Table 1
// "probability update"); ActorPolicy (learner.hpp) uses it when it applies
// and falls back to the portable kernels (linear.hpp) otherwise.
//
// Why intrinsics here, when the rest of the runtime uses GCC vector
// extensions under target_clones: the kernel lives on lane masks (partial
// vectors at the ends of each actor, tie-breaking in the ranks), and GCC
// lowers some mixes of vector comparisons and selects to scalar code. AVX-512
// has masked loads, stores and compares, so the kernel needs no slack past
// any buffer and no scalar tails.
//
// Dependency-free (the compiler's <immintrin.h>), like the other runtime
// headers. x86-64 with GCC or Clang; elsewhere, or without AVX-512 at run
// time, SortProbabilities returns false and the caller uses the portable path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dcgym/runtime/expf.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(DCGYM_NO_CLONES)
#include <immintrin.h>
#define DCGYM_FUSED_AVX512 1
#endif

namespace dcgym::runtime {

#if defined(DCGYM_FUSED_AVX512)
// GCC 12 reports its own intrinsics' _mm512_undefined_* results as (maybe) uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace fused {

#define DCGYM_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"), always_inline)) inline
#define DCGYM_AVX512_LAMBDA __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"), always_inline))

// e^x for x <= 0 on 16 lanes: expf.hpp's cephes::Exp with explicit FMAs.
DCGYM_AVX512 __m512 Exp(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(cephes::kFloor));
  const __m512 round = _mm512_set1_ps(cephes::kRound);
  const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(cephes::kLog2e), round);
  const __m512 n = _mm512_sub_ps(t, round);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(cephes::kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(cephes::kLn2Lo), r);
  __m512 p = _mm512_set1_ps(cephes::kP[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(cephes::kP[k]));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i bits = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(cephes::kRoundBits)),
                       _mm512_set1_epi32(127)),
      23);  // 2^n as floats
  return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

// Calls kernel(std::integral_constant<int, NZ>) for NZ = PackedWidth(2n) / 16 in 1..8 (n <= 64) and
// returns true; false for larger n. The kernels are templates on NZ so that every loop over vectors
// has a compile-time bound and stays in registers.
template <class Kernel>
DCGYM_AVX512 bool ForWidth(std::size_t n, Kernel&& kernel) {
  switch ((2 * n + 15) / 16) {
    case 1: kernel(std::integral_constant<int, 1>{}); return true;
    case 2: kernel(std::integral_constant<int, 2>{}); return true;
    case 3: kernel(std::integral_constant<int, 3>{}); return true;
    case 4: kernel(std::integral_constant<int, 4>{}); return true;
    case 5: kernel(std::integral_constant<int, 5>{}); return true;
    case 6: kernel(std::integral_constant<int, 6>{}); return true;
    case 7: kernel(std::integral_constant<int, 7>{}); return true;
    case 8: kernel(std::integral_constant<int, 8>{}); return true;
    default: return false;
  }
}

// Lanes [0, m) of a 16-lane vector, m <= 16.
DCGYM_AVX512 __mmask16 FirstLanes(std::size_t m) { return static_cast<__mmask16>((1u << m) - 1u); }

// acc += Σ_c f[c] rows[c] over n packed rows of 16 NZ floats, row c into the
// partial sums acc[c % P] (the last n % P rows into acc[0]). Always inlined, so
// the accumulators stay in registers.
template <int P, int NZ>
DCGYM_AVX512 void AccumulateRows(const float* f, std::size_t n, const float* rows, __m512 (&acc)[P][NZ]) {
  constexpr std::size_t S = 16 * NZ;
  std::size_t c = 0;
  for (; c + P <= n; c += P)
    for (int p = 0; p < P; ++p) {
      const __m512 q = _mm512_set1_ps(f[c + p]);
      for (int v = 0; v < NZ; ++v)
        acc[p][v] = _mm512_fmadd_ps(q, _mm512_loadu_ps(rows + (c + p) * S + 16 * v), acc[p][v]);
    }
  for (; c < n; ++c) {
    const __m512 q = _mm512_set1_ps(f[c]);
    for (int v = 0; v < NZ; ++v) acc[0][v] = _mm512_fmadd_ps(q, _mm512_loadu_ps(rows + c * S + 16 * v), acc[0][v]);
  }
}

// For packed rows of S = 16 NZ floats (n in (8 (NZ - 1), 8 NZ]): φ_a =
// [table[rank_i] (n) | x (n) | 1] into phi (masked stores: exactly 2n + 1
// floats) and the logits of both actors, packed, into zv (lanes [0, n)
// migration, [n, 2n) stealing). Steps:
// 1. The load rows and the bias row: they do not wait for the ranks.
// 2. The ranks, 16 nodes per vector, one integer compare per other node (in
//    the node's own block against a per-lane threshold, for the ties), and
//    their table entries by permutes.
// 3. The rank rows.
template <int NZ>
DCGYM_AVX512 void Logits(const float* x, std::size_t n, const float* rank_table, const float* w, float* phi,
                         __m512 (&zv)[NZ]) {
  constexpr int NV = (NZ + 1) / 2;         // vectors per actor
  constexpr int P = NZ >= 8 ? 1 : 8 / NZ;  // interleaved partial sums: P x NZ ~ 8 FMA chains
  constexpr std::size_t S = 16 * NZ;
  __m512 acc[P][NZ];
  for (int p = 0; p < P; ++p)
    for (int v = 0; v < NZ; ++v) acc[p][v] = _mm512_setzero_ps();

  // 1. Load rows (features n .. 2n - 1) and the bias row (2n).
  AccumulateRows<P, NZ>(x, n, w + n * S, acc);
  for (int v = 0; v < NZ; ++v) acc[P - 1][v] = _mm512_add_ps(acc[P - 1][v], _mm512_loadu_ps(w + 2 * n * S + 16 * v));

  // 2. Ranks: rank_i = #{j < i: x_j >= x_i} + #{j > i: x_j > x_i} (torch's stable
  //    descending argsort), on integer keys with the floats' order: +0.0f makes
  //    -0 into +0, then flipping the magnitude bits of negatives orders them as
  //    signed ints (loads are never NaN). x_j >= x_i is then key_j > key_i - 1,
  //    so every comparison is one integer compare against a threshold vector.
  alignas(64) std::int32_t key[16 * NV];
  for (int b = 0; b < NV; ++b) {
    const std::size_t i0 = 16 * static_cast<std::size_t>(b);
    const __m512i bits = _mm512_castps_si512(
        _mm512_add_ps(_mm512_maskz_loadu_ps(FirstLanes(n - i0 < 16 ? n - i0 : 16), x + i0), _mm512_setzero_ps()));
    const __m512i flip = _mm512_and_si512(_mm512_srai_epi32(bits, 31), _mm512_set1_epi32(0x7FFFFFFF));
    _mm512_store_si512(key + i0, _mm512_xor_si512(bits, flip));
  }
  // Read the keys back from memory below: broadcast loads use the load ports, while GCC would
  // otherwise extract each key from the register it knows it came from (shuffles on the port the
  // compares need).
  asm volatile("" ::: "memory");
  alignas(64) float phi_rank[16 * NV];
  const __m512i one = _mm512_set1_epi32(1);
  for (int b = 0; b < NV; ++b) {
    const std::size_t i0 = 16 * static_cast<std::size_t>(b);
    const std::size_t m = n - i0 < 16 ? n - i0 : 16;
    const __mmask16 in = FirstLanes(m);
    const __m512 xi = _mm512_maskz_loadu_ps(in, x + i0);
    const __m512i ki = _mm512_load_si512(key + i0), ki_ge = _mm512_sub_epi32(ki, one);
    __m512i r = _mm512_setzero_si512();
    for (std::size_t j = 0; j < i0; ++j)  // every lane's i is after j: >=
      r = _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(key[j]), ki_ge), r, one);
    for (std::size_t d = 0; d < m; ++d) {  // the block itself: >= for the lanes after d, > for the others
      const __m512i threshold = _mm512_mask_sub_epi32(ki, static_cast<__mmask16>(0xFFFEu << d), ki, one);
      r = _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(key[i0 + d]), threshold), r, one);
    }
    for (std::size_t j = i0 + m; j < n; ++j)  // every lane's i is before j: >
      r = _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(key[j]), ki), r, one);
    // table[r], r < n <= 16 NV: the table is read with masked loads (no padding needed).
    __m512 t;
    const __m512 t0 = _mm512_maskz_loadu_ps(FirstLanes(n < 16 ? n : 16), rank_table);
    if constexpr (NV == 1) {
      t = _mm512_permutexvar_ps(r, t0);
    } else {
      const __m512 t1 = _mm512_maskz_loadu_ps(FirstLanes(n < 32 ? n - 16 : 16), rank_table + 16);
      t = _mm512_permutex2var_ps(t0, r, t1);
      if constexpr (NV > 2) {
        const __m512 t2 = _mm512_maskz_loadu_ps(FirstLanes(n < 48 ? n - 32 : 16), rank_table + 32);
        const __m512 t3 = _mm512_maskz_loadu_ps(FirstLanes(n < 48 ? 0 : n - 48), rank_table + 48);
        const __m512 hi = _mm512_permutex2var_ps(t2, r, t3);
        t = _mm512_mask_mov_ps(t, _mm512_cmpge_epi32_mask(r, _mm512_set1_epi32(32)), hi);
      }
    }
    _mm512_store_ps(phi_rank + 16 * b, t);
    _mm512_mask_storeu_ps(phi + i0, in, t);  // φ_a for the caller
    _mm512_mask_storeu_ps(phi + n + i0, in, xi);
  }
  phi[2 * n] = 1.0f;
  asm volatile("" ::: "memory");  // the rank features' broadcasts from memory too (see the keys)

  // 3. Rank rows (features 0 .. n - 1).
  AccumulateRows<P, NZ>(phi_rank, n, w, acc);
  for (int v = 0; v < NZ; ++v) {
    zv[v] = acc[0][v];
    for (int p = 1; p < P; ++p) zv[v] = _mm512_add_ps(zv[v], acc[p][v]);
  }
}

// 4. Each actor's logits from lane 0 (the lanes past n zero): migration =
//    lanes [0, n) of the packed logits, stealing = [n, 2n). The stealing
//    logits start at lane n: two-source permutes bring them to lane 0 without
//    a trip through memory. on[v]: the lanes of vector v below n.
template <int NZ>
DCGYM_AVX512 void SplitActors(const __m512 (&zv)[NZ], std::size_t n, __m512 (&mig)[(NZ + 1) / 2],
                              __m512 (&st)[(NZ + 1) / 2], __mmask16 (&on)[(NZ + 1) / 2]) {
  constexpr int NV = (NZ + 1) / 2;
  const std::size_t shift = n % 16;
  for (int v = 0; v < NV; ++v) {
    const std::size_t first = 16 * static_cast<std::size_t>(v);
    on[v] = FirstLanes(n - first < 16 ? n - first : 16);
    mig[v] = _mm512_maskz_mov_ps(on[v], zv[v]);
  }
  if (shift == 0) {  // n = 16 NV: the stealing logits are whole vectors (NZ = 2 NV)
    for (int v = 0; v < NV; ++v) st[v] = _mm512_maskz_mov_ps(on[v], zv[(NV + v) % NZ]);
  } else {  // they start at lane `shift` of vector (NZ - 1) / 2
    const __m512i take = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(static_cast<int>(shift)));
    constexpr int kBase = (NZ - 1) / 2;
    for (int v = 0; v < NV; ++v) {
      const __m512 lo = zv[(kBase + v) % NZ];
      const __m512 hi = kBase + v + 1 < NZ ? zv[(kBase + v + 1) % NZ] : _mm512_setzero_ps();
      st[v] = _mm512_maskz_permutex2var_ps(on[v], lo, take, hi);
    }
  }
}

// Both actors' softmaxes from Logits: z[0, S) = [softmax(W_m φ_a) | softmax(W_s φ_a) | 0].
// 4. SplitActors.
// 5. Each softmax is exp(z) / Σ exp(z) when every |z| <= 80 (no term can
//    overflow or underflow, and no maximum is on the critical path);
//    otherwise exp(z - max z).
// 6. Masked stores write exactly S floats of z.
template <int NZ>
DCGYM_AVX512 void SortProbabilities(const float* x, std::size_t n, const float* rank_table, const float* w, float* phi,
                                    float* z) {
  constexpr int NV = (NZ + 1) / 2;
  constexpr std::size_t S = 16 * NZ;
  __m512 zv[NZ];
  Logits<NZ>(x, n, rank_table, w, phi, zv);

  __m512 mig[NV], st[NV];
  __mmask16 on[NV];
  SplitActors<NZ>(zv, n, mig, st, on);

  // 5. Softmaxes (the lanes past n hold 0 and are masked out of the sums).
  __m512 top = _mm512_setzero_ps();
  for (int v = 0; v < NV; ++v) top = _mm512_max_ps(top, _mm512_max_ps(_mm512_abs_ps(mig[v]), _mm512_abs_ps(st[v])));
  __m512 mshift = _mm512_setzero_ps(), sshift = _mm512_setzero_ps();
  if (__builtin_expect(_mm512_cmp_ps_mask(top, _mm512_set1_ps(80.0f), _CMP_GT_OQ) != 0, 0)) {
    __m512 mm = _mm512_set1_ps(-3.0e38f), sm = mm;
    for (int v = 0; v < NV; ++v) {
      mm = _mm512_mask_max_ps(mm, on[v], mm, mig[v]);
      sm = _mm512_mask_max_ps(sm, on[v], sm, st[v]);
    }
    mshift = _mm512_set1_ps(_mm512_reduce_max_ps(mm));
    sshift = _mm512_set1_ps(_mm512_reduce_max_ps(sm));
  }
  __m512 msum = _mm512_setzero_ps(), ssum = _mm512_setzero_ps();
  for (int v = 0; v < NV; ++v) {
    mig[v] = _mm512_maskz_mov_ps(on[v], Exp(_mm512_sub_ps(mig[v], mshift)));
    st[v] = _mm512_maskz_mov_ps(on[v], Exp(_mm512_sub_ps(st[v], sshift)));
    msum = _mm512_add_ps(msum, mig[v]);
    ssum = _mm512_add_ps(ssum, st[v]);
  }
  const __m512 minv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(msum));
  const __m512 sinv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(ssum));

  // 6. z = [migration | stealing | 0]: zeros first, then the two actors over them.
  for (std::size_t k = 0; k < S; k += 16) _mm512_storeu_ps(z + k, _mm512_setzero_ps());
  for (int v = 0; v < NV; ++v) _mm512_mask_storeu_ps(z + 16 * v, on[v], _mm512_mul_ps(mig[v], minv));
  for (int v = 0; v < NV; ++v) _mm512_mask_storeu_ps(z + n + 16 * v, on[v], _mm512_mul_ps(st[v], sinv));
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))) inline bool Dispatch(const float* x, std::size_t n,
                                                                                       const float* rank_table,
                                                                                       const float* w, float* phi,
                                                                                       float* z) {
  return ForWidth(n, [&](auto nz) DCGYM_AVX512_LAMBDA { SortProbabilities<nz()>(x, n, rank_table, w, phi, z); });
}
// The exponentials of one rack_v0 table row (TableExponentials, learner.hpp)
// from one actor's logits in registers (on[]: the masks of its n lanes):
// c = clip(z - ½(max z + min z), ±max_logit), e = exp(c - max c) into ev and
// e[0, n); returns Σ e, and in *clipped whether the clip acted.
template <int NV>
DCGYM_AVX512 float TableExpV(const __m512 (&z)[NV], const __mmask16 (&on)[NV], float max_logit, float* e, bool* clipped,
                             __m512 (&ev)[NV]) {
  __m512 hi = _mm512_set1_ps(-3.0e38f), lo = _mm512_set1_ps(3.0e38f);
  for (int v = 0; v < NV; ++v) {
    hi = _mm512_mask_max_ps(hi, on[v], hi, z[v]);
    lo = _mm512_mask_min_ps(lo, on[v], lo, z[v]);
  }
  const float top = _mm512_reduce_max_ps(hi), bottom = _mm512_reduce_min_ps(lo);
  const float centre = 0.5f * (top + bottom);
  const float high = top - centre;  // the largest centred logit
  *clipped = high > max_logit || bottom - centre < -max_logit;
  const float m = high > max_logit ? max_logit : high;  // the largest after the clip
  const __m512 c = _mm512_set1_ps(centre), cap = _mm512_set1_ps(max_logit), floor = _mm512_set1_ps(-max_logit);
  __m512 sum = _mm512_setzero_ps();
  for (int v = 0; v < NV; ++v) {
    const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(z[v], c), floor), cap);
    ev[v] = _mm512_maskz_mov_ps(on[v], Exp(_mm512_sub_ps(t, _mm512_set1_ps(m))));
    _mm512_mask_storeu_ps(e + 16 * v, on[v], ev[v]);
    sum = _mm512_add_ps(sum, ev[v]);
  }
  return _mm512_reduce_add_ps(sum);
}

// TableExpV, then the row e / Σ e in double into row[0, n) (as the controller's TableRow).
template <int NV>
DCGYM_AVX512 float TableRowV(const __m512 (&z)[NV], const __mmask16 (&on)[NV], float max_logit, float* e, double* row,
                             bool* clipped) {
  __m512 ev[NV];
  const float total = TableExpV<NV>(z, on, max_logit, e, clipped, ev);
  const __m512d inv = _mm512_set1_pd(1.0 / static_cast<double>(total));
  for (int v = 0; v < NV; ++v) {
    const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(ev[v]));
    const __m512d b = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ev[v]), 1)));
    _mm512_mask_storeu_pd(row + 16 * v, static_cast<__mmask8>(on[v]), _mm512_mul_pd(a, inv));
    _mm512_mask_storeu_pd(row + 16 * v + 8, static_cast<__mmask8>(on[v] >> 8), _mm512_mul_pd(b, inv));
  }
  return total;
}

template <int NZ>
DCGYM_AVX512 void SortTableRows(const float* x, std::size_t n, const float* rank_table, const float* w, float max_logit,
                                float* phi, float* z, float* e, double* row_m, double* row_s, float* totals,
                                bool* clipped) {
  constexpr int NV = (NZ + 1) / 2;
  __m512 zv[NZ];
  Logits<NZ>(x, n, rank_table, w, phi, zv);
  for (int v = 0; v < NZ; ++v) _mm512_storeu_ps(z + 16 * v, zv[v]);
  __m512 mig[NV], st[NV];
  __mmask16 on[NV];
  SplitActors<NZ>(zv, n, mig, st, on);
  totals[0] = TableRowV<NV>(mig, on, max_logit, e, row_m, clipped);
  totals[1] = TableRowV<NV>(st, on, max_logit, e + n, row_s, clipped + 1);
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))) inline bool DispatchTableRows(
    const float* x, std::size_t n, const float* rank_table, const float* w, float max_logit, float* phi, float* z,
    float* e, double* row_m, double* row_s, float* totals, bool* clipped) {
  return ForWidth(n, [&](auto nz) DCGYM_AVX512_LAMBDA {
    SortTableRows<nz()>(x, n, rank_table, w, max_logit, phi, z, e, row_m, row_s, totals, clipped);
  });
}

// TableExponentials (learner.hpp) for n <= 64: the row's logits z[0, n) loaded
// with masks, then TableExpV.
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))) inline float TableExponentials(
    const float* z, std::size_t n, float max_logit, float* e, bool* clipped) {
  auto row = [&](auto nv) DCGYM_AVX512_LAMBDA {
    constexpr int NV = nv();
    __m512 v[NV], ev[NV];
    __mmask16 on[NV];
    for (int k = 0; k < NV; ++k) {
      const std::size_t first = 16 * static_cast<std::size_t>(k);
      on[k] = FirstLanes(n - first < 16 ? n - first : 16);
      v[k] = _mm512_maskz_loadu_ps(on[k], z + first);
    }
    return TableExpV<NV>(v, on, max_logit, e, clipped, ev);
  };
  switch ((n + 15) / 16) {
    case 1: return row(std::integral_constant<int, 1>{});
    case 2: return row(std::integral_constant<int, 2>{});
    case 3: return row(std::integral_constant<int, 3>{});
    default: return row(std::integral_constant<int, 4>{});  // n <= 64 (Applies)
  }
}
#undef DCGYM_AVX512
#undef DCGYM_AVX512_LAMBDA

inline bool HaveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("fma");
  return have;
}
}  // namespace fused
#pragma GCC diagnostic pop
#endif

namespace fused {
/// Whether the fused kernels run for n nodes here.
inline bool Applies(std::size_t n) {
#if defined(DCGYM_FUSED_AVX512)
  return n >= 1 && n <= 64 && HaveAvx512();
#else
  (void)n;
  return false;
#endif
}
}  // namespace fused

/// One node's probability update over the sort basis, fused (see the file
/// comment): φ_a(x) into phi (2n + 1 floats) and z (PackedWidth(2n) floats) =
/// [softmax(W_m φ_a) (n) | softmax(W_s φ_a) (n) | 0], from the packed actors
/// `w` (64-byte aligned, F_a rows of PackedWidth(2n) floats) and
/// RankFeatureTable(n). Returns false, writing nothing, when it does not
/// apply: n == 0 or n > 64, no AVX-512 on this CPU, or another compiler or
/// architecture. The result equals the portable path's (Features,
/// PackedLinear, FastSoftmax) to float rounding: the sums run in another order.
inline bool SortProbabilities(const float* x, std::size_t n, const float* rank_table, const float* w, float* phi,
                              float* z) {
#if defined(DCGYM_FUSED_AVX512)
  return fused::Applies(n) && fused::Dispatch(x, n, rank_table, w, phi, z);
#else
  (void)x, (void)n, (void)rank_table, (void)w, (void)phi, (void)z;
  return false;
#endif
}

/// RackController's per-node step in one call: φ_a(x) into phi, both actors'
/// raw logits into z (PackedWidth(2n) floats), and for each actor the rack_v0
/// table row of TableExponentials: e = exp(clip(z - centre, ±max_logit) - max)
/// into e (2n floats: migration then stealing), the rows e / Σ e in double
/// into row_m and row_s (n each), Σ e into totals[0, 1] and whether the clip
/// acted into clipped[0, 1]. False (nothing written) when the fused path does
/// not apply.
inline bool SortTableRows(const float* x, std::size_t n, const float* rank_table, const float* w, float max_logit,
                          float* phi, float* z, float* e, double* row_m, double* row_s, float* totals, bool* clipped) {
#if defined(DCGYM_FUSED_AVX512)
  return fused::Applies(n) &&
         fused::DispatchTableRows(x, n, rank_table, w, max_logit, phi, z, e, row_m, row_s, totals, clipped);
#else
  (void)x, (void)n, (void)rank_table, (void)w, (void)max_logit, (void)phi, (void)z, (void)e, (void)row_m, (void)row_s,
      (void)totals, (void)clipped;
  return false;
#endif
}

}  // namespace dcgym::runtime
