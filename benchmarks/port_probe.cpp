// What one core of this machine issues per cycle in the mixes the fused policy
// kernel (cpp_core/include/dcgym/runtime/fused.hpp) is made of: 512-bit FMAs
// with and without a 64-byte memory operand, vector compares into mask
// registers and vector adds. docs/policy_runtime.md uses these numbers to say
// why the 32-node probability update stops where it does.
//
//   g++ -O2 -mavx512f -mavx512bw benchmarks/port_probe.cpp -o /tmp/port_probe && /tmp/port_probe
//
// Each loop body is inline assembly, so the compiler cannot reorder, fuse or
// drop any of it. Cycles come from a chain of dependent 64-bit multiplies (3
// cycles each) run in the same loop as the vector work: the clock that counts
// is the one while 512-bit FMAs run. x86-64 with AVX-512 only.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

// clang-format off: assembler strings laid out one instruction group per line
#define FM(o, r) "vfmadd231ps " #o "(%1), %%zmm31, %%zmm" #r "\n\t"
#define FMEM16                                                                                               \
  FM(0, 0) FM(64, 1) FM(128, 2) FM(192, 3) FM(256, 4) FM(320, 5) FM(384, 6) FM(448, 7) FM(512, 8) FM(576, 9) \
  FM(640, 10) FM(704, 11) FM(768, 12) FM(832, 13) FM(896, 14) FM(960, 15)
#define FR(r) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #r "\n\t"
#define FREG16 FR(0) FR(1) FR(2) FR(3) FR(4) FR(5) FR(6) FR(7) FR(8) FR(9) FR(10) FR(11) FR(12) FR(13) FR(14) FR(15)
#define LD(o, r) "vmovaps " #o "(%1), %%zmm" #r "\n\t"
#define LOAD16                                                                                               \
  LD(0, 0) LD(64, 1) LD(128, 2) LD(192, 3) LD(256, 4) LD(320, 5) LD(384, 6) LD(448, 7) LD(512, 8) LD(576, 9) \
  LD(640, 10) LD(704, 11) LD(768, 12) LD(832, 13) LD(896, 14) LD(960, 15)
#define HALF_MEM FM(0, 0) FM(64, 1) FM(128, 2) FM(192, 3) FM(256, 4) FM(320, 5) FM(384, 6) FM(448, 7) \
  FR(8) FR(9) FR(10) FR(11) FR(12) FR(13) FR(14) FR(15)
#define CP(s, k) "vpcmpgtd %%zmm" #s ", %%zmm30, %%k" #k "\n\t"
#define CMP8 CP(28, 1) CP(27, 2) CP(26, 3) CP(25, 4) CP(24, 5) CP(23, 6) CP(22, 7) CP(21, 1)
#define AD(a) "vpaddd %%zmm29, %%zmm" #a ", %%zmm" #a "\n\t"
#define ADD8 AD(16) AD(17) AD(18) AD(19) AD(20) AD(16) AD(17) AD(18)
#define MUL "imul %0, %0\n\t"
#define MUL16 MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL MUL
#define CLOBBERS                                                                                          \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "k1", "k2", "k3", "k4", "k5",  \
      "k6", "k7"

// One function per loop body; `x` carries the multiply chain, `p` the 1 KB the loads read.
#define PROBE(name, body)                                                   \
  __attribute__((noinline)) std::uint64_t name(const float* p, std::uint64_t n) { \
    std::uint64_t x = 3;                                                    \
    for (std::uint64_t i = 0; i < n; ++i) asm volatile(body : "+r"(x) : "r"(p) : CLOBBERS); \
    return x;                                                               \
  }
// clang-format on
PROBE(Clock, MUL16 MUL16)
PROBE(ClockWithFma, MUL16 MUL16 FREG16)
PROBE(FmaReg, FREG16)
PROBE(Loads, LOAD16)
PROBE(FmaMem, FMEM16)
PROBE(FmaHalfMem, HALF_MEM)
PROBE(FmaMemCmp, FMEM16 CMP8)
PROBE(FmaMemAdd, FMEM16 ADD8)
PROBE(Cmp, CMP8)

template <class F>
double NsPerIteration(F f, const float* p, std::uint64_t n) {
  double best = 1e300;
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    f(p, n);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = ns / static_cast<double>(n) < best ? ns / static_cast<double>(n) : best;
  }
  return best;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
    std::fprintf(stderr, "port_probe: this CPU has no AVX-512 (F and BW needed)\n");
    return 2;
  }
  auto* p = static_cast<float*>(std::aligned_alloc(64, 1024));
  for (int i = 0; i < 256; ++i) p[i] = 1.0f;
  const std::uint64_t n = 10000000;
  const double ghz = 96.0 / NsPerIteration(Clock, p, n);  // 32 multiplies of 3 cycles
  // With 16 independent FMAs beside 96 cycles of multiplies, the multiplies set the pace.
  const double ghz_fma = 96.0 / NsPerIteration(ClockWithFma, p, n);
  auto cycles = [&](auto f, double per) { return NsPerIteration(f, p, n) * ghz_fma / per; };
  const double fma_mem = cycles(FmaMem, 16);
  std::printf("clock: %.2f GHz alone, %.2f GHz beside 512-bit FMAs (the unit below)\n\n", ghz, ghz_fma);
  std::printf("cycles per instruction, 16 or 24 in flight per loop iteration:\n");
  std::printf("  512-bit FMA, registers only             %.2f\n", cycles(FmaReg, 16));
  std::printf("  64-byte load alone                      %.2f\n", cycles(Loads, 16));
  std::printf("  vpcmpd into a mask register alone       %.2f\n", cycles(Cmp, 8));
  std::printf("  FMA with a 64-byte memory operand       %.2f\n", fma_mem);
  std::printf("  half the FMAs from memory, half not     %.2f per FMA\n", cycles(FmaHalfMem, 16));
  std::printf("  a compare added to the memory FMAs      %.2f extra\n", cycles(FmaMemCmp, 8) - 2.0 * fma_mem);
  std::printf("  a vector add added to the memory FMAs   %.2f extra\n", cycles(FmaMemAdd, 8) - 2.0 * fma_mem);
  std::free(p);
  return 0;
}
