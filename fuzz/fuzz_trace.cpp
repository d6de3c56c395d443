// The trace reader: bytes as a trace file (parse_trace, for the default pod's 8 GPUs).
// TraceError is expected; anything else is a finding. A trace that reads must round-trip:
// format_trace (what --access-log writes) reads back to the same accesses.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_escape.hpp"
#include "sim/pod/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<podsim::TraceEntry> entries;
  try {
    entries = podsim::parse_trace(text, "fuzz.trace", 8);
  } catch (const podsim::TraceError&) {
    return 0;
  } catch (const std::exception& e) {
    podsim::fuzz::escaped(e);
  }
  try {
    if (podsim::parse_trace(podsim::format_trace(entries), "formatted.trace", 8) != entries)
      podsim::fuzz::finding("a formatted trace does not read back to the same accesses");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: a formatted trace does not read: %s\n", e.what());
    std::abort();
  }
  return 0;
}
