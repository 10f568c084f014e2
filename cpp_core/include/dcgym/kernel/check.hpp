// Config validation helpers shared by the models: every refusal is a
// std::invalid_argument whose message starts with the field's path.
#pragma once

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

namespace dcgym::kernel {

// The most offered load a rack or lb config takes, as a fraction of its capacity (a load above 1 overloads:
// short overload runs are legal, 10 bounds the backlog they build).
inline constexpr double kMaxLoad = 10;

[[noreturn]] inline void Fail(const std::string& field, const std::string& what) {
  throw std::invalid_argument(field + ": " + what);
}

// A value as the message shows it.
template <typename T>
std::string Str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The index of `name` in `names`, a model's table of names in the order of its enum; std::invalid_argument
// naming `field`, the value and every allowed name when it is not there. Tables of names are defined once, in
// the model, and exported to Python by the binding.
template <std::size_t N>
std::size_t IndexOfName(const char* const (&names)[N], const std::string& name, const std::string& field) {
  std::string allowed;
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return i;
    allowed += (i ? ", " : "") + std::string(names[i]);
  }
  Fail(field, "unknown value '" + name + "'; allowed: " + allowed);
}

}  // namespace dcgym::kernel
