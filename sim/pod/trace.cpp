#include "sim/pod/trace.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/compute/compute_config.hpp"

namespace podsim {

TraceError::TraceError(const std::string& file, std::size_t line, const std::string& message)
    : std::runtime_error(line ? fmt::format("{}:{}: {}", file, line, message)
                              : fmt::format("{}: {}", file, message)) {}

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return e == std::errc() && p == s.data() + s.size();
}

// A line of a trace is short: longer ones are not a trace (a binary file, /dev/zero), and
// are refused without being read whole.
constexpr std::size_t kMaxLineBytes = 4096;

// The next line of `in` without its end (LF or CRLF); false at the end of the input. A line
// too long, or with a NUL byte in it, is an error naming it.
bool next_line(std::streambuf& in, std::string& line, std::size_t n, const std::string& name) {
  line.clear();
  int c = in.sbumpc();
  if (c == std::char_traits<char>::eof()) return false;
  for (; c != std::char_traits<char>::eof() && c != '\n'; c = in.sbumpc()) {
    if (c == 0) throw TraceError(name, n, "a NUL byte: not a text trace");
    if (line.size() == kMaxLineBytes)
      throw TraceError(name, n,
                       fmt::format("a line longer than {} bytes: not a trace", kMaxLineBytes));
    line.push_back(static_cast<char>(c));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 BOM
  return true;
}

std::vector<TraceEntry> parse_stream(std::streambuf& in, const std::string& name,
                                     std::uint32_t gpus) {
  std::vector<TraceEntry> out;
  std::vector<Time> last;  // per GPU
  std::string line;
  std::size_t n = 0;
  while (next_line(in, line, n + 1, name)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;)
      f.push_back(w);
    if (f.empty()) continue;
    if (f.size() != 5)
      throw TraceError(name, n,
                       fmt::format("expected 5 fields (time_ns gpu op va size), got {}", f.size()));
    TraceEntry e;
    try {
      e.at = parse_time(f[0] + "ns");
    } catch (const UnitError& e) {
      // A number that is no time here (too large, finer than a picosecond) says which.
      char* end = nullptr;
      const double v = std::strtod(f[0].c_str(), &end);
      if (end == f[0].c_str() + f[0].size() && v >= 0)
        throw TraceError(
            name, n,
            f[0].find_first_of("eE") != std::string::npos
                ? fmt::format("time \"{}\": write ns in plain digits (no exponent)", f[0])
                : fmt::format("time \"{}\" ns: {}", f[0], e.what()));
      throw TraceError(name, n, fmt::format("time \"{}\" is not a number of ns", f[0]));
    }
    std::uint64_t gpu = 0, va = 0, size = 0;
    if (!parse_u64(f[1], gpu) || gpu >= gpus)
      throw TraceError(name, n,
                       fmt::format("GPU \"{}\" is not a GPU of the pod (0 to {})", f[1], gpus - 1));
    e.gpu = static_cast<std::uint32_t>(gpu);
    if (f[2] == "R")
      e.op = TraceOp::Read;
    else if (f[2] == "W")
      e.op = TraceOp::Write;
    else if (f[2] == "A")
      e.op = TraceOp::Atomic;
    else
      throw TraceError(name, n, fmt::format("op \"{}\" is not R, W or A", f[2]));
    if (!parse_u64(f[3], va))
      throw TraceError(name, n, fmt::format("address \"{}\" is not a number", f[3]));
    if (!parse_u64(f[4], size) || size < 64 || size > 256 || size % 64 != 0)
      throw TraceError(name, n, fmt::format("size \"{}\" is not 64, 128, 192 or 256", f[4]));
    if (va % access_stride(size) != 0)
      throw TraceError(name, n,
                       size == 192
                           ? fmt::format("address {} is not aligned to 256 bytes (a 192-byte "
                                         "access may not cross a 256-byte block)",
                                         f[3])
                           : fmt::format("address {} is not aligned to its size", f[3]));
    e.va = va;
    e.size = static_cast<std::uint32_t>(size);
    if (last.size() <= e.gpu) last.resize(e.gpu + 1, Time{});
    if (e.at < last[e.gpu])
      throw TraceError(name, n, fmt::format("time goes back for GPU {}", e.gpu));
    last[e.gpu] = e.at;
    out.push_back(e);
  }
  return out;
}

}  // namespace

std::vector<TraceEntry> parse_trace(const std::string& text, const std::string& name,
                                    std::uint32_t gpus) {
  std::istringstream in(text);
  return parse_stream(*in.rdbuf(), name, gpus);
}

std::vector<TraceEntry> load_trace(const std::string& path, std::uint32_t gpus) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw TraceError(path, 0, "is a directory, not a trace file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, "cannot open the trace file");
  std::vector<TraceEntry> out = parse_stream(*in.rdbuf(), path, gpus);
  if (in.bad()) throw TraceError(path, 0, "cannot read the trace file");
  // A trace replaces generated traffic: one with no access would run nothing.
  if (out.empty()) throw TraceError(path, 0, "no accesses in it (only comments or nothing)");
  return out;
}

std::string format_trace(const std::vector<TraceEntry>& entries) {
  std::string out = "# time_ns gpu op va size\n";
  for (const TraceEntry& e : entries) {
    const char op = e.op == TraceOp::Read ? 'R' : e.op == TraceOp::Write ? 'W' : 'A';
    const std::int64_t ps = e.at.as_ps();
    out += fmt::format("{}.{:03} {} {} {:#x} {}\n", ps / 1000, ps % 1000, e.gpu, op, e.va, e.size);
  }
  return out;
}

}  // namespace podsim
