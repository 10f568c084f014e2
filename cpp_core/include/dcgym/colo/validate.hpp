// Range checks shared by the colo config structs: every refusal is a
// std::invalid_argument naming the field and the value.
#pragma once

#include <cmath>
#include <string>

#include "dcgym/kernel/check.hpp"

namespace dcgym::colo {

inline void Require(bool ok, const std::string& field, const std::string& what, double value) {
  if (!ok) kernel::Fail(field, what + ", got " + kernel::Str(value));
}

inline void RequireNonNegative(double v, const std::string& field) {
  Require(std::isfinite(v) && v >= 0, field, "must be a finite number >= 0", v);
}

inline void RequirePositive(double v, const std::string& field) {
  Require(std::isfinite(v) && v > 0, field, "must be a finite number > 0", v);
}

}  // namespace dcgym::colo
