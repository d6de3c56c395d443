// Linux errno values the driver's user API and protocol return (negated in the kernel).
#pragma once

#include <string_view>

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
