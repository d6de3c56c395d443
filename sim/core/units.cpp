#include "sim/core/units.hpp"

#include <fmt/format.h>
#include <array>
#include <cctype>

namespace podsim {
namespace {

using u128 = unsigned __int128;

struct UnitScale {
  std::string_view suffix;
  std::uint64_t scale;  // base units per 1 of this unit
};

// A non-negative decimal number held exactly as mantissa / 10^decimals.
struct Decimal {
  u128 mantissa = 0;
  unsigned decimals = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// Splits "12.5 ns" into the number and the unit, exactly.
std::pair<Decimal, std::string_view> split(std::string_view text, const char* what) {
  std::string_view s = trim(text);
  Decimal d;
  std::size_t i = 0;
  bool digits = false, dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      if (d.mantissa > (u128(1) << 100))
        throw UnitError(fmt::format("\"{}\": number too large", text));
      d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
      if (dot) ++d.decimals;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digits) {
    if (!s.empty() && s.front() == '-')
      throw UnitError(fmt::format("\"{}\" is negative; expected {}", text, what));
    throw UnitError(fmt::format("\"{}\" does not start with a number; expected {}", text, what));
  }
  if (d.decimals > 18) throw UnitError(fmt::format("\"{}\": too many decimals", text));
  return {d, trim(s.substr(i))};
}

template <std::size_t N>
std::uint64_t parse_scaled(std::string_view text, const std::array<UnitScale, N>& units,
                           const char* what, const char* base_name) {
  auto [d, unit] = split(text, what);
  if (unit.empty()) throw UnitError(fmt::format("\"{}\" has no unit; expected {}", text, what));
  for (const UnitScale& u : units) {
    if (u.suffix != unit) continue;
    u128 pow10 = 1;
    for (unsigned k = 0; k < d.decimals; ++k)
      pow10 *= 10;
    u128 scaled = d.mantissa * u.scale;
    if (scaled % pow10 != 0)
      throw UnitError(fmt::format("\"{}\" is not a whole number of {}", text, base_name));
    u128 v = scaled / pow10;
    if (v > u128(INT64_MAX)) throw UnitError(fmt::format("\"{}\" is too large", text));
    return static_cast<std::uint64_t>(v);
  }
  throw UnitError(fmt::format("\"{}\": unknown unit \"{}\"; expected {}", text, unit, what));
}

constexpr std::uint64_t K = 1'000, M = 1'000'000, G = 1'000'000'000, T = 1'000'000'000'000;

constexpr std::array<UnitScale, 6> kTimeUnits{
    {{"ps", 1}, {"ns", K}, {"us", M}, {"\xC2\xB5s", M}, {"ms", G}, {"s", T}}};
constexpr std::array<UnitScale, 9> kByteUnits{{{"B", 1},
                                               {"KB", K},
                                               {"MB", M},
                                               {"GB", G},
                                               {"TB", T},
                                               {"KiB", 1ull << 10},
                                               {"MiB", 1ull << 20},
                                               {"GiB", 1ull << 30},
                                               {"TiB", 1ull << 40}}};
constexpr std::array<UnitScale, 14> kBandwidthUnits{{{"b/s", 1},
                                                     {"Kb/s", K},
                                                     {"Mb/s", M},
                                                     {"Gb/s", G},
                                                     {"Tb/s", T},
                                                     {"B/s", 8},
                                                     {"KB/s", 8 * K},
                                                     {"MB/s", 8 * M},
                                                     {"GB/s", 8 * G},
                                                     {"TB/s", 8 * T},
                                                     {"KiB/s", 8ull << 10},
                                                     {"MiB/s", 8ull << 20},
                                                     {"GiB/s", 8ull << 30},
                                                     {"TiB/s", 8ull << 40}}};
constexpr std::array<UnitScale, 4> kFrequencyUnits{{{"Hz", 1}, {"kHz", K}, {"MHz", M}, {"GHz", G}}};
constexpr std::array<UnitScale, 6> kLengthUnits{
    {{"um", 1}, {"\xC2\xB5m", 1}, {"mm", K}, {"cm", 10 * K}, {"m", M}, {"km", G}}};

// Writes v/scale with up to `max_dec` decimals if that is exact; empty string otherwise.
std::string exact_decimal(std::uint64_t v, std::uint64_t scale, unsigned max_dec) {
  std::uint64_t whole = v / scale, rem = v % scale;
  if (rem == 0) return fmt::format("{}", whole);
  std::string frac;
  for (unsigned k = 0; k < max_dec && rem != 0; ++k) {
    rem *= 10;
    frac.push_back(static_cast<char>('0' + rem / scale));
    rem %= scale;
  }
  if (rem != 0) return {};
  return fmt::format("{}.{}", whole, frac);
}

// Picks the largest unit that writes `v` exactly with at most three decimals.
template <std::size_t N>
std::string format_scaled(std::uint64_t v, const std::array<UnitScale, N>& units,
                          std::initializer_list<std::size_t> order) {
  for (std::size_t idx : order) {
    const UnitScale& u = units[idx];
    if (v != 0 && v < u.scale) continue;
    std::string num = exact_decimal(v, u.scale, 3);
    if (!num.empty()) return fmt::format("{}{}", num, u.suffix);
  }
  return {};
}

}  // namespace

Time Bandwidth::transfer_time(Bytes n) const {
  if (bps_ == 0) return Time::max();
  u128 num = u128(n.count()) * 8u * u128(T);
  u128 ps = (num + bps_ - 1) / bps_;
  return Time::ps(static_cast<std::int64_t>(ps));
}

Time Frequency::period() const {
  if (hz_ == 0) return Time::max();
  return Time::ps(static_cast<std::int64_t>((T + hz_ / 2) / hz_));
}

Time parse_time(std::string_view s) {
  return Time::ps(static_cast<std::int64_t>(
      parse_scaled(s, kTimeUnits, UnitTraits<Time>::what, "picoseconds")));
}
Bytes parse_bytes(std::string_view s) {
  return Bytes(parse_scaled(s, kByteUnits, UnitTraits<Bytes>::what, "bytes"));
}
Bandwidth parse_bandwidth(std::string_view s) {
  return Bandwidth::bits_per_second(
      parse_scaled(s, kBandwidthUnits, UnitTraits<Bandwidth>::what, "bits per second"));
}
Frequency parse_frequency(std::string_view s) {
  return Frequency::hz(parse_scaled(s, kFrequencyUnits, UnitTraits<Frequency>::what, "hertz"));
}
Length parse_length(std::string_view s) {
  return Length::um(parse_scaled(s, kLengthUnits, UnitTraits<Length>::what, "micrometres"));
}

std::string to_string(Time t) {
  std::int64_t v = t.as_ps();
  if (v < 0) return fmt::format("-{}", to_string(Time::ps(-v)));
  return format_scaled(static_cast<std::uint64_t>(v), kTimeUnits, {5, 4, 2, 1, 0});
}
std::string to_string(Bytes b) {
  // The shortest exact whole-number form: "64KiB", "432GB", "4100B".
  std::string best = fmt::format("{}B", b.count());
  for (std::size_t idx : {8, 7, 6, 5, 4, 3, 2, 1}) {
    const UnitScale& u = kByteUnits[idx];
    if (b.count() == 0 || b.count() % u.scale != 0) continue;
    std::string s = fmt::format("{}{}", b.count() / u.scale, u.suffix);
    if (s.size() < best.size()) best = s;
  }
  return best;
}

std::string pretty(Time t) {
  const double ps = static_cast<double>(t.as_ps());
  const double mag = ps < 0 ? -ps : ps;
  if (mag >= 1e12) return fmt::format("{:.4g} s", ps / 1e12);
  if (mag >= 1e9) return fmt::format("{:.4g} ms", ps / 1e9);
  if (mag >= 1e6) return fmt::format("{:.4g} us", ps / 1e6);
  if (mag >= 1e3) return fmt::format("{:.4g} ns", ps / 1e3);
  return fmt::format("{} ps", t.as_ps());
}
std::string to_string(Bandwidth b) {
  std::uint64_t v = b.bits_per_second();
  if (v == 0) return "0Gb/s";  // not "0Tb/s": the unit link rates are given in
  if (v % 8 == 0) {
    std::string bytes = format_scaled(v, kBandwidthUnits, {9, 8, 7, 6, 5});
    std::string bits = format_scaled(v, kBandwidthUnits, {4, 3, 2, 1, 0});
    return bytes.size() < bits.size() ? bytes : bits;
  }
  return format_scaled(v, kBandwidthUnits, {4, 3, 2, 1, 0});
}
std::string to_string(Frequency f) {
  return format_scaled(f.as_hz(), kFrequencyUnits, {3, 2, 1, 0});
}
std::string to_string(Length l) {
  return format_scaled(l.as_um(), kLengthUnits, {4, 2, 0});
}

}  // namespace podsim
