// e^x for x <= 0 to float precision, written once for the runtime's three
// callers: one float (learner.hpp's ExpNonPositive), 16 lanes of GCC vector
// extensions (learner.hpp's ExpV) and the AVX-512 kernels (fused.hpp's Exp,
// which uses the constants below with intrinsics).
//
// Cephes' expf: x = n ln2 + r with n an integer and |r| <= ½ ln2 (ln2 in two
// parts, so that r is exact), e^r by a degree-6 polynomial, 2^n put into the
// exponent bits. Relative error < 2e-7. Branch-free, so loops over it
// vectorise (std::exp does not without -ffast-math). Inputs below -87 give
// e^-87 ~ 1.6e-38, still a normal float.
#pragma once

#include <cstdint>
#include <cstring>

namespace dcgym::runtime::cephes {

// Inlined into every caller, so that the 16-lane instance takes the target of
// the clone it runs in and never crosses a call (as linear.hpp's helpers: the
// ABI note about 64-byte vectors does not apply).
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#define DCGYM_CEPHES_INLINE __attribute__((always_inline)) inline
#else
#define DCGYM_CEPHES_INLINE inline
#endif

inline constexpr float kFloor = -87.0f;
inline constexpr float kRound = 12582912.0f;            // 1.5 * 2^23: adding it rounds to an integer
inline constexpr std::int32_t kRoundBits = 0x4B400000;  // kRound's bits: t's bits minus these are n
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
// e^r ~ 1 + r + r^2 (kP[0] r^5 + ... + kP[5])
inline constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/// e^x for x <= 0 on F = float (I = std::int32_t) or on a GCC vector of
/// floats F with I the integer vector of the same shape.
template <class F, class I>
DCGYM_CEPHES_INLINE F Exp(F x) {
  const F floor = F{} + kFloor, round = F{} + kRound;
  x = x < floor ? floor : x;
  const F t = x * kLog2e + round;
  const F n = t - round;
  F r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  F p = F{} + kP[0];
  p = p * r + kP[1];
  p = p * r + kP[2];
  p = p * r + kP[3];
  p = p * r + kP[4];
  p = p * r + kP[5];
  p = p * r * r + r + 1.0f;
  I bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits = (bits - kRoundBits + 127) << 23;  // 2^n as floats
  F scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

#undef DCGYM_CEPHES_INLINE
}  // namespace dcgym::runtime::cephes
