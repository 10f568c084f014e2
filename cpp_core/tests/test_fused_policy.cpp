// The fused probability update (runtime/fused.hpp), the fused logits and
// table exponentials of the controller, against an independent
// double-precision reference and against the portable kernels, for every rack
// size it handles (1..64) and past it (the fallback), with ties, zeros, clipped
// loads and logits large enough to take the max-shifted softmax. Every
// buffer ends at a page followed by an inaccessible page, so any read or write
// past an end faults.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/rng.hpp"
#include "dcgym/runtime/learner.hpp"

using dcgym::kernel::Rng;
namespace rt = dcgym::runtime;

namespace {

// `count` floats ending exactly where an inaccessible page begins. The start
// keeps the alignment of count * 4 bytes within a page (the packed weights'
// rows are multiples of 64 bytes, so they stay 64-byte aligned).
class Fenced {
 public:
  explicit Fenced(std::size_t count) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = count * sizeof(float);
    size_ = (bytes + page - 1) / page * page + page;
    base_ = static_cast<char*>(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(base_ != MAP_FAILED);
    CHECK_EQ(mprotect(base_ + size_ - page, page, PROT_NONE), 0);
    data_ = reinterpret_cast<float*>(base_ + size_ - page - bytes);
  }
  ~Fenced() { munmap(base_, size_); }
  Fenced(const Fenced&) = delete;
  Fenced& operator=(const Fenced&) = delete;
  float* data() { return data_; }
  float& operator[](std::size_t i) { return data_[i]; }

 private:
  char* base_ = nullptr;
  std::size_t size_ = 0;
  float* data_ = nullptr;
};

float Uniform(Rng& rng, float lo, float hi) { return lo + (hi - lo) * static_cast<float>(rng.Uniform()); }

// One rack size: `trials` random load vectors, weights of scale `w_scale`.
void CheckSize(std::size_t n, float w_scale, Rng& rng, int trials, double* worst) {
  const std::size_t f = rt::NumFeatures(rt::Basis::kSort, n), s = rt::PackedWidth(2 * n);
  rt::ActorPolicy policy(n, rt::Basis::kSort);
  Fenced w(f * s), x(n), table(n), phi(f), z(s);
  for (std::size_t c = 0; c < f; ++c)
    for (std::size_t k = 0; k < s; ++k) w[c * s + k] = k < 2 * n ? w_scale * Uniform(rng, -1.0f, 1.0f) : 0.0f;
  rt::RankFeatureTable(n, table.data());
  std::vector<float> phi_ref(f), z_port(s);
  std::vector<std::uint32_t> rank(n);
  const bool fused = rt::SortProbabilities(x.data(), n, table.data(), w.data(), phi.data(), z.data());
#if defined(DCGYM_FUSED_AVX512)
  CHECK_EQ(fused, n >= 1 && n <= 64 && rt::fused::HaveAvx512());
  CHECK_EQ(fused, rt::fused::Applies(n));
#else
  CHECK(!fused);
#endif
  int phi_wrong = 0, out_of_tolerance = 0, padding_wrong = 0, portable_wrong = 0, logits_wrong = 0, table_wrong = 0;
  int rows_wrong = 0;
  Fenced tmp(n), e(n), e2(2 * n);
  for (int t = 0; t < trials; ++t) {
    for (std::size_t i = 0; i < n; ++i) {  // ties: zeros, a clip value, a few repeated values
      const std::uint64_t kind = rng.Next() % 5;
      x[i] = kind == 0 ? 0.0f : kind == 1 ? 1.5f : kind == 2 ? -0.0f : Uniform(rng, 0.0f, 1.5f);
    }
    policy.Probabilities(x.data(), w.data(), phi.data(), z.data());
    rt::Features(rt::Basis::kSort, x.data(), n, table.data(), rank.data(), phi_ref.data());
    for (std::size_t c = 0; c < f; ++c) phi_wrong += phi[c] != phi_ref[c];
    // Reference: logits and softmax in double from the exact features.
    for (int half = 0; half < 2; ++half) {
      std::vector<double> logit(n), mass(n);
      double top = -1e300, lsum = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        double a = 0.0, l1 = 0.0;
        for (std::size_t c = 0; c < f; ++c) {
          a += static_cast<double>(phi_ref[c]) * w[c * s + half * n + k];
          l1 += std::fabs(static_cast<double>(phi_ref[c]) * w[c * s + half * n + k]);
        }
        logit[k] = a;
        lsum = std::max(lsum, l1);
        top = std::max(top, a);
      }
      double total = 0.0;
      for (std::size_t k = 0; k < n; ++k) total += (mass[k] = std::exp(logit[k] - top));
      for (std::size_t k = 0; k < n; ++k) {
        const double p = mass[k] / total, got = z[half * n + k];
        // float32 logits carry up to ~(f + 2) ulps of their L1 mass; a softmax turns a logit
        // error e into a relative error of at most 2e; plus a few ulps for exp, sum and scale.
        const double tol = p * (2.0 * (f + 2) * 6e-8 * lsum + 2e-6) + 1e-37;
        const double err = std::fabs(got - p);
        *worst = std::max(*worst, err / tol);
        out_of_tolerance += !(err <= tol);
      }
    }
    for (std::size_t k = 2 * n; k < s; ++k) padding_wrong += z[k] != 0.0f;
    // The portable path computes the same numbers up to the order of the sums.
    rt::PackedLinear(w.data(), f, s, phi_ref.data(), z_port.data());
    rt::FastSoftmax(z_port.data(), n);
    rt::FastSoftmax(z_port.data() + n, n);
    for (std::size_t k = 0; k < 2 * n; ++k) {
      const double p = z_port[k];
      portable_wrong += !(std::fabs(z[k] - p) <= p * (4.0 * (f + 2) * 6e-8 * 64.0 * w_scale + 4e-6) + 1e-37);
    }
    // The controller's fallback path: raw logits, then each actor's table exponentials.
    policy.FeaturesAndLogits(x.data(), w.data(), phi.data(), z.data());
    // Each float logit within (F + 2) ulps of its L1 mass of the double logit.
    auto count_wrong_logits = [&](const float* logits) {
      int wrong = 0;
      for (std::size_t k = 0; k < s; ++k) {
        double a = 0.0, l1 = 0.0;
        for (std::size_t c = 0; c < f; ++c) {
          a += static_cast<double>(phi_ref[c]) * w[c * s + k];
          l1 += std::fabs(static_cast<double>(phi_ref[c]) * w[c * s + k]);
        }
        wrong += !(std::fabs(logits[k] - a) <= (f + 2) * 6e-8 * l1 + 1e-30);
      }
      return wrong;
    };
    for (std::size_t c = 0; c < f; ++c) phi_wrong += phi[c] != phi_ref[c];
    logits_wrong += count_wrong_logits(z.data());
    const float max_logit = 5.0f;
    for (int half = 0; half < 2; ++half) {
      const float* zh = z.data() + half * n;
      bool clipped = false;
      const float total = rt::TableExponentials(zh, n, max_logit, tmp.data(), e.data(), &clipped);
      const double top = *std::max_element(zh, zh + n), bottom = *std::min_element(zh, zh + n);
      const double centre = 0.5 * (top + bottom), high = std::min<double>(top - centre, max_logit);
      double sum = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        const double c = std::clamp<double>(zh[k] - centre, -max_logit, max_logit);
        const double want = std::exp(c - high);
        sum += want;
        // float z - centre and c - max c round to an ulp of their operands
        const double ulps = 1.2e-7 * (std::fabs(zh[k]) + std::fabs(centre) + 2.0 * std::fabs(high));
        table_wrong += !(std::fabs(e[k] - want) <= want * (ulps + 1e-6) + 1e-37);
      }
      table_wrong += !(std::fabs(total - sum) <= 1e-6 * sum + 1.2e-7 * (top - bottom + 2.0 * max_logit) * sum);
      table_wrong += clipped != (top - centre > max_logit || bottom - centre < -max_logit);
    }
    // The controller's fused step: its logits as exact as the portable ones, and from those logits
    // the same exponentials and rows as TableExponentials, to float rounding.
    {
      std::vector<double> rows(2 * n, -1.0);
      float totals[2];
      bool clipped[2];
      std::fill(phi.data(), phi.data() + f, -7.0f);
      const bool applied = policy.TableRows(x.data(), w.data(), max_logit, phi.data(), z.data(), e2.data(), rows.data(),
                                            rows.data() + n, totals, clipped);
      CHECK_EQ(applied, fused);
      if (applied) {
        for (std::size_t c = 0; c < f; ++c) phi_wrong += phi[c] != phi_ref[c];
        rows_wrong += count_wrong_logits(z.data());
        for (int half = 0; half < 2; ++half) {
          std::vector<float> e_ref(n);
          bool clipped_ref = false;
          const float total_ref =
              rt::TableExponentials(z.data() + half * n, n, max_logit, tmp.data(), e_ref.data(), &clipped_ref);
          rows_wrong += clipped[half] != clipped_ref;
          rows_wrong += !(std::fabs(totals[half] - total_ref) <= 1e-6f * total_ref);
          for (std::size_t k = 0; k < n; ++k) {
            const double want = e_ref[k], row_want = want / total_ref;
            rows_wrong += !(std::fabs(e2[half * n + k] - want) <= 1e-6 * want + 1e-37);
            rows_wrong += !(std::fabs(rows[half * n + k] - row_want) <= 2e-6 * row_want + 1e-300);
          }
        }
      }
    }
  }
  CHECK_EQ(phi_wrong, 0);
  CHECK_EQ(out_of_tolerance, 0);
  CHECK_EQ(padding_wrong, 0);
  CHECK_EQ(portable_wrong, 0);
  CHECK_EQ(logits_wrong, 0);
  CHECK_EQ(table_wrong, 0);
  CHECK_EQ(rows_wrong, 0);
}

}  // namespace

int main() {
  Rng rng(20261122, 0);
  double worst = 0.0;
  for (std::size_t n = 1; n <= 70; ++n) {
    CheckSize(n, 1.0f, rng, 40, &worst);   // logits of a few units: exp(z) / Σ exp(z)
    CheckSize(n, 40.0f, rng, 10, &worst);  // logits past ±80: the max-shifted softmax
  }
  std::printf("worst error / tolerance: %.3f\n", worst);
  return dcgym::check::Report("fused_policy");
}
