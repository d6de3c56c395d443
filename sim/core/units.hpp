// Unit types: quantities are parsed once, at the edge, from strings such as "150ns",
// "800Gb/s", "64KiB", "1.5GHz", "2m", and carried as exact integers from then on.
//
//   Time       picoseconds (signed, so differences are natural)
//   Bytes      bytes
//   Bandwidth  bits per second
//   Frequency  hertz
//   Length     micrometres
//
// Parsing is exact decimal arithmetic: "2.5us" is 2'500'000 ps, never 2'499'999.
// A value that is not a whole number of the base unit ("0.1ps") is an error.
#pragma once

#include <compare>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace podsim {

// Thrown by the parse functions; the message says what was wrong and what is expected.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(std::int64_t v) { return Time(v); }
  static constexpr Time ns(std::int64_t v) { return Time(v * 1'000); }
  static constexpr Time us(std::int64_t v) { return Time(v * 1'000'000); }
  static constexpr Time ms(std::int64_t v) { return Time(v * 1'000'000'000); }
  static constexpr Time max() { return Time(INT64_MAX); }

  constexpr std::int64_t as_ps() const { return ps_; }
  constexpr double as_ns() const { return static_cast<double>(ps_) / 1e3; }
  constexpr double as_us() const { return static_cast<double>(ps_) / 1e6; }
  constexpr double as_seconds() const { return static_cast<double>(ps_) / 1e12; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr Time operator*(std::int64_t k) const { return Time(ps_ * k); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::int64_t v) : ps_(v) {}
  std::int64_t ps_ = 0;
};

class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::uint64_t v) : v_(v) {}
  static constexpr Bytes KiB(std::uint64_t v) { return Bytes(v << 10); }
  static constexpr Bytes MiB(std::uint64_t v) { return Bytes(v << 20); }
  static constexpr Bytes GiB(std::uint64_t v) { return Bytes(v << 30); }
  constexpr std::uint64_t count() const { return v_; }
  constexpr Bytes operator+(Bytes o) const { return Bytes(v_ + o.v_); }
  constexpr auto operator<=>(const Bytes&) const = default;

 private:
  std::uint64_t v_ = 0;
};

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bits_per_second(std::uint64_t v) { return Bandwidth(v); }
  static constexpr Bandwidth gbit_per_second(std::uint64_t v) {
    return Bandwidth(v * 1'000'000'000);
  }
  static constexpr Bandwidth gbyte_per_second(std::uint64_t v) {
    return Bandwidth(v * 8'000'000'000);
  }
  constexpr std::uint64_t bits_per_second() const { return bps_; }
  constexpr double bytes_per_second() const { return static_cast<double>(bps_) / 8.0; }
  // Time to put `n` bytes through at this rate, rounded up to a whole picosecond.
  Time transfer_time(Bytes n) const;
  constexpr Bandwidth operator*(std::uint64_t k) const { return Bandwidth(bps_ * k); }
  constexpr auto operator<=>(const Bandwidth&) const = default;

 private:
  constexpr explicit Bandwidth(std::uint64_t v) : bps_(v) {}
  std::uint64_t bps_ = 0;
};

class Frequency {
 public:
  constexpr Frequency() = default;
  static constexpr Frequency hz(std::uint64_t v) { return Frequency(v); }
  static constexpr Frequency mhz(std::uint64_t v) { return Frequency(v * 1'000'000); }
  constexpr std::uint64_t as_hz() const { return hz_; }
  // One clock period, rounded to the nearest picosecond.
  Time period() const;
  constexpr auto operator<=>(const Frequency&) const = default;

 private:
  constexpr explicit Frequency(std::uint64_t v) : hz_(v) {}
  std::uint64_t hz_ = 0;
};

class Length {
 public:
  constexpr Length() = default;
  static constexpr Length um(std::uint64_t v) { return Length(v); }
  static constexpr Length mm(std::uint64_t v) { return Length(v * 1'000); }
  static constexpr Length m(std::uint64_t v) { return Length(v * 1'000'000); }
  constexpr std::uint64_t as_um() const { return um_; }
  constexpr auto operator<=>(const Length&) const = default;

 private:
  constexpr explicit Length(std::uint64_t v) : um_(v) {}
  std::uint64_t um_ = 0;
};

// Parsers: accept "<decimal><unit>" with optional blanks between number and unit.
Time parse_time(std::string_view s);            // ps ns us µs ms s
Bytes parse_bytes(std::string_view s);          // B KB MB GB TB (10^3) KiB MiB GiB TiB (2^10)
Bandwidth parse_bandwidth(std::string_view s);  // b/s Kb/s .. Tb/s, B/s KB/s .. TB/s, KiB/s ..
Frequency parse_frequency(std::string_view s);  // Hz kHz MHz GHz
Length parse_length(std::string_view s);        // um µm mm cm m

// Canonical text for each type, exact and parseable again ("150ns", "2.5us", "64KiB").
std::string to_string(Time t);
std::string to_string(Bytes b);
std::string to_string(Bandwidth b);
std::string to_string(Frequency f);
std::string to_string(Length l);

// For people: four significant digits in a fitting unit ("259.1 us", "1.25 ms").
std::string pretty(Time t);

// What each parser expects, for error messages ("a time such as \"150ns\"").
template <class T>
struct UnitTraits;
template <>
struct UnitTraits<Time> {
  static constexpr const char* what = "a time such as \"150ns\" (units ps, ns, us, ms, s)";
  static Time parse(std::string_view s) { return parse_time(s); }
};
template <>
struct UnitTraits<Bytes> {
  static constexpr const char* what =
      "a size such as \"64KiB\" (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
  static Bytes parse(std::string_view s) { return parse_bytes(s); }
};
template <>
struct UnitTraits<Bandwidth> {
  static constexpr const char* what =
      "a bandwidth such as \"800Gb/s\" or \"3.6TB/s\" (b/s or B/s with K, M, G, T prefixes)";
  static Bandwidth parse(std::string_view s) { return parse_bandwidth(s); }
};
template <>
struct UnitTraits<Frequency> {
  static constexpr const char* what = "a frequency such as \"1.5GHz\" (units Hz, kHz, MHz, GHz)";
  static Frequency parse(std::string_view s) { return parse_frequency(s); }
};
template <>
struct UnitTraits<Length> {
  static constexpr const char* what = "a length such as \"2m\" (units um, mm, cm, m)";
  static Length parse(std::string_view s) { return parse_length(s); }
};

}  // namespace podsim
