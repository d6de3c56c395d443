// What every fuzz target does with an exception it does not expect: say which, and abort, so
// libFuzzer records the input as a crash (an expected error is caught before this).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

namespace podsim::fuzz {

[[noreturn]] inline void escaped(const std::exception& e) {
  std::fprintf(stderr, "fuzz: unexpected exception %s: %s\n", typeid(e).name(), e.what());
  std::abort();
}

[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "fuzz: %s\n", what);
  std::abort();
}

}  // namespace podsim::fuzz
