#include "driver_model/errno.hpp"

#include <array>
#include <utility>

namespace podsim::driver {
std::string_view errno_name(Errno e) {
  for (const auto& n : kErrnoNames)
    if (n.value == e) return n.name;
  return "E?";
}

bool errno_from_name(std::string_view name, Errno& out) {
  for (const auto& n : kErrnoNames)
    if (n.name == name) {
      out = n.value;
      return true;
    }
  return false;
}

}  // namespace podsim::driver
