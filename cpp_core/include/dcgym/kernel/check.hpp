// Config validation helpers shared by the models: every refusal is a
// std::invalid_argument whose message starts with the field's path.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace dcgym::kernel {

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

}  // namespace dcgym::kernel
