#include "driver_model/errno.hpp"

#include <array>
#include <utility>

namespace podsim::driver {
namespace {
constexpr std::array<std::pair<Errno, std::string_view>, 15> kNames{{
    {Errno::Ok, "OK"},
    {Errno::NoEnt, "ENOENT"},
    {Errno::Io, "EIO"},
    {Errno::NoDev, "ENODEV"},
    {Errno::Again, "EAGAIN"},
    {Errno::NoMem, "ENOMEM"},
    {Errno::Fault, "EFAULT"},
    {Errno::Busy, "EBUSY"},
    {Errno::Inval, "EINVAL"},
    {Errno::NoSpc, "ENOSPC"},
    {Errno::Time, "ETIME"},
    {Errno::Comm, "ECOMM"},
    {Errno::OpNotSupp, "EOPNOTSUPP"},
    {Errno::TimedOut, "ETIMEDOUT"},
    {Errno::RestartSys, "ERESTARTSYS"},
}};
}  // namespace

std::string_view errno_name(Errno e) {
  for (const auto& [v, n] : kNames)
    if (v == e) return n;
  return "E?";
}

bool errno_from_name(std::string_view name, Errno& out) {
  for (const auto& [v, n] : kNames)
    if (n == name) {
      out = v;
      return true;
    }
  return false;
}

}  // namespace podsim::driver
