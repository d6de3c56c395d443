// Linux errno values the driver's user API and protocol return (negated in the kernel).
#pragma once

#include <array>
#include <string_view>

#include "sim/core/params.hpp"

namespace podsim::driver {

enum class Errno : int {
  Ok = 0,
  NoEnt = 2,
  Io = 5,
  Again = 11,
  NoMem = 12,
  Fault = 14,
  Busy = 16,
  NoDev = 19,  // the call was cut short by a reset of this device
  Inval = 22,
  NoSpc = 28,
  Time = 62,
  Comm = 70,
  OpNotSupp = 95,
  TimedOut = 110,
  RestartSys = 512,
};

// Their names, as scenarios write them (a step's "expect").
inline constexpr std::array<EnumName<Errno>, 15> kErrnoNames{{
    {"OK", Errno::Ok, "success"},
    {"ENOENT", Errno::NoEnt, "no such object"},
    {"EIO", Errno::Io, "I/O error"},
    {"ENODEV", Errno::NoDev, "the device was reset during the call"},
    {"EAGAIN", Errno::Again, "try again"},
    {"ENOMEM", Errno::NoMem, "out of memory"},
    {"EFAULT", Errno::Fault, "bad address"},
    {"EBUSY", Errno::Busy, "busy"},
    {"EINVAL", Errno::Inval, "invalid argument"},
    {"ENOSPC", Errno::NoSpc, "no space (a full ring)"},
    {"ETIME", Errno::Time, "timer expired (write-back not seen)"},
    {"ECOMM", Errno::Comm, "communication error (firmware status)"},
    {"EOPNOTSUPP", Errno::OpNotSupp, "not supported"},
    {"ETIMEDOUT", Errno::TimedOut, "timed out (no response)"},
    {"ERESTARTSYS", Errno::RestartSys, "interrupted by a signal"},
}};

std::string_view errno_name(Errno e);
// Parses a name such as "ENOENT" (or "OK"); false if unknown.
bool errno_from_name(std::string_view name, Errno& out);

template <class T>
struct Result {
  Errno err = Errno::Ok;
  T value{};
  bool ok() const { return err == Errno::Ok; }
};

}  // namespace podsim::driver
