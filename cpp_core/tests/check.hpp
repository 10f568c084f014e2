// A minimal check library for the kernel unit tests.
//
// CHECK(cond), CHECK_EQ(a, b), CHECK_NEAR(a, b, tol) and
// CHECK_THROWS(expr, Exception) print file:line and the values on failure and
// count it; a test's main() ends with `return dcgym::check::Report("name");`,
// which is non-zero when any check failed, so CTest marks the test failed.
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

namespace dcgym::check {

struct Counters {
  long checks = 0;
  long failures = 0;
};

inline Counters& Count() {
  static Counters c;
  return c;
}

template <typename T>
std::string Show(const T& v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

inline bool Record(bool ok, const char* file, int line, const std::string& what) {
  ++Count().checks;
  if (!ok) {
    ++Count().failures;
    std::fprintf(stderr, "%s:%d: FAILED %s\n", file, line, what.c_str());
  }
  return ok;
}

// Wilson-Hilferty normal score of a chi-square statistic with `dof` degrees
// of freedom: ~N(0, 1) when the counts follow the hypothesised law, so a
// bound of 5 fails a correct sampler with probability ~3e-7.
inline double ChiSquareZ(double statistic, double dof) {
  const double v = 2.0 / (9.0 * dof);
  return (std::cbrt(statistic / dof) - (1.0 - v)) / std::sqrt(v);
}

inline int Report(const char* name) {
  const Counters& c = Count();
  std::printf("%s: %ld checks, %ld failed\n", name, c.checks, c.failures);
  return c.failures == 0 ? 0 : 1;
}

}  // namespace dcgym::check

#define CHECK(cond) ::dcgym::check::Record(static_cast<bool>(cond), __FILE__, __LINE__, "CHECK(" #cond ")")

#define CHECK_EQ(a, b)                                                                                            \
  do {                                                                                                            \
    const auto& check_a_ = (a);                                                                                   \
    const auto& check_b_ = (b);                                                                                   \
    ::dcgym::check::Record(                                                                                       \
        check_a_ == check_b_, __FILE__, __LINE__,                                                                 \
        "CHECK_EQ(" #a ", " #b "): " + ::dcgym::check::Show(check_a_) + " vs " + ::dcgym::check::Show(check_b_)); \
  } while (0)

// |a - b| <= tol; NaN never passes.
#define CHECK_NEAR(a, b, tol)                                                                                   \
  do {                                                                                                          \
    const double check_a_ = (a), check_b_ = (b), check_t_ = (tol);                                              \
    ::dcgym::check::Record(std::fabs(check_a_ - check_b_) <= check_t_, __FILE__, __LINE__,                      \
                           "CHECK_NEAR(" #a ", " #b ", " #tol "): " + ::dcgym::check::Show(check_a_) + " vs " + \
                               ::dcgym::check::Show(check_b_) + ", difference " +                               \
                               ::dcgym::check::Show(check_a_ - check_b_) + " > tolerance " +                    \
                               ::dcgym::check::Show(check_t_));                                                 \
  } while (0)

#define CHECK_THROWS(expr, Exception)                                                                     \
  do {                                                                                                    \
    bool check_thrown_ = false;                                                                           \
    try {                                                                                                 \
      (void)(expr);                                                                                       \
    } catch (const Exception&) {                                                                          \
      check_thrown_ = true;                                                                               \
    } catch (...) {                                                                                       \
    }                                                                                                     \
    ::dcgym::check::Record(check_thrown_, __FILE__, __LINE__, "CHECK_THROWS(" #expr ", " #Exception ")"); \
  } while (0)
