// Seeded random-number streams.
//
// One 64-bit seed determines every stream of a simulation: stream k is a
// xoshiro256++ generator whose state is filled by SplitMix64 from
// mix(seed, k). There is no global generator and no std::random_device, so a
// seed always reproduces a run bit for bit. Separate streams for arrivals,
// service demands and dispatch keep the workload identical across policies
// (common random numbers), which makes policy comparisons sharper.
#pragma once

#include <cmath>
#include <cstdint>

namespace dcgym::kernel {

// Tables of the ziggurat method for the unit exponential (Marsaglia and Tsang
// 2000, "The Ziggurat Method for Generating Random Variables", 256 layers of
// area kV, base layer ending at kR). x[0] = kV / f(kR) is the base strip's
// pseudo-width, x[1] = kR, x[256] = 0; f[i] = exp(-x[i]).
struct ExpZiggurat {
  static constexpr double kR = 7.69711747013104972;
  static constexpr double kV = 0.0039496598225815571993;
  double x[257];
  double f[257];
  ExpZiggurat() {
    x[0] = kV * std::exp(kR);
    x[1] = kR;
    for (int i = 2; i < 256; ++i) x[i] = -std::log(kV / x[i - 1] + std::exp(-x[i - 1]));
    x[256] = 0;
    for (int i = 0; i < 257; ++i) f[i] = std::exp(-x[i]);
  }
};
inline const ExpZiggurat kExpZiggurat;

// SplitMix64 (Steele, Lea, Flood 2014): used only to expand seeds.
inline uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// xoshiro256++ (Blackman and Vigna 2019): 256-bit state, period 2^256 - 1.
class Rng {
 public:
  Rng() : Rng(0, 0) {}
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (0xD1B54A32D192ED03ULL * (stream + 1));
    for (auto& w : s_) w = SplitMix64(x);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform on [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform on (0, 1]: safe to take the logarithm of.
  double UniformOpen0() { return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53; }

  // Exponential with mean 1 by the ziggurat method: one 64-bit draw and a
  // multiply in 98.9% of calls; exact in distribution (not an approximation).
  double Exp1() {
    const ExpZiggurat& z = kExpZiggurat;
    for (;;) {
      const uint64_t bits = Next();
      const int i = static_cast<int>(bits & 0xff);
      const double x = static_cast<double>(bits >> 11) * 0x1.0p-53 * z.x[i];
      if (x < z.x[i + 1]) return x;                                                 // inside the layer's rectangle
      if (i == 0) return ExpZiggurat::kR - std::log(UniformOpen0());                // tail beyond kR
      if (z.f[i + 1] + (z.f[i] - z.f[i + 1]) * Uniform() < std::exp(-x)) return x;  // wedge
    }
  }

  // Uniform integer in [0, n) without modulo bias (Lemire 2019).
  uint32_t Below(uint32_t n) {
    uint64_t m = static_cast<uint64_t>(static_cast<uint32_t>(Next() >> 32)) * n;
    uint32_t low = static_cast<uint32_t>(m);
    if (low < n) {
      const uint32_t threshold = static_cast<uint32_t>(-n) % n;
      while (low < threshold) {
        m = static_cast<uint64_t>(static_cast<uint32_t>(Next() >> 32)) * n;
        low = static_cast<uint32_t>(m);
      }
    }
    return static_cast<uint32_t>(m >> 32);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Named stream ids: adding a stream never changes the others.
enum class Stream : uint64_t {
  kArrivals = 1,
  kService = 2,
  kDispatch = 3,
  kNodes = 4,
  kNetwork = 5,
  kPolicy = 6,
};

inline Rng MakeRng(uint64_t seed, Stream s, uint64_t sub = 0) {
  return Rng(seed, (static_cast<uint64_t>(s) << 32) + sub);
}

}  // namespace dcgym::kernel
