// Access traces: the text format podsim replays (workload.traffic.trace) and records
// (podsim run --access-log FILE). See docs/traces.md.
//
//   # time_ns gpu op va size
//   0       0 R 0x100000000000 64
//   12.5    1 W 0x100000200040 128
//
// One access per line: when (ns since the GPU's access phase began, non-decreasing per GPU),
// which GPU issues it, R (load), W (store) or A (atomic), the GPU virtual address (hex with
// 0x, or decimal), and the size in bytes (64 to 256, a multiple of 64, aligned). Blank lines
// and '#' comments are ignored.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute/trace_entry.hpp"

namespace podsim {

class TraceError : public std::runtime_error {
 public:
  TraceError(const std::string& file, std::size_t line, const std::string& message);
};

// Parses a trace; lines for GPUs at or beyond `gpus` are errors too.
std::vector<TraceEntry> parse_trace(const std::string& text, const std::string& name,
                                    std::uint32_t gpus = 1024);
std::vector<TraceEntry> load_trace(const std::string& path, std::uint32_t gpus = 1024);
std::string format_trace(const std::vector<TraceEntry>& entries);

}  // namespace podsim
