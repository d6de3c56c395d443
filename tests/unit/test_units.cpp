#include <catch2/catch.hpp>

#include "sim/core/units.hpp"

using namespace podsim;

TEST_CASE("times parse exactly in every unit", "[units]") {
  CHECK(parse_time("150ns") == Time::ps(150'000));
  CHECK(parse_time("2.5us") == Time::ps(2'500'000));
  CHECK(parse_time("2.5\xC2\xB5s") == Time::ps(2'500'000));
  CHECK(parse_time("1ms") == Time::ps(1'000'000'000));
  CHECK(parse_time("5s") == Time::ps(5'000'000'000'000));
  CHECK(parse_time("640ps") == Time::ps(640));
  CHECK(parse_time("0.001ns") == Time::ps(1));
  CHECK(parse_time(" 12 ns ") == Time::ps(12'000));
  CHECK(parse_time("0ns") == Time{});
  CHECK(parse_time("0.1us") == Time::ps(100'000));  // no binary-fraction drift
}

TEST_CASE("bad time strings say what is wrong", "[units]") {
  CHECK_THROWS_WITH(parse_time("150"), Catch::Contains("has no unit"));
  CHECK_THROWS_WITH(parse_time("150 parsecs"), Catch::Contains("unknown unit \"parsecs\""));
  CHECK_THROWS_WITH(parse_time("-5ns"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_time("ns"), Catch::Contains("does not start with a number"));
  CHECK_THROWS_WITH(parse_time(""), Catch::Contains("does not start with a number"));
  CHECK_THROWS_WITH(parse_time("0.5ps"), Catch::Contains("not a whole number of picoseconds"));
  CHECK_THROWS_WITH(parse_time("1.2.3ns"), Catch::Contains("unknown unit"));
  CHECK_THROWS_WITH(parse_time("99999999999999s"), Catch::Contains("too large"));
  CHECK_THROWS_AS(parse_time("10 GHz"), UnitError);
}

TEST_CASE("sizes: decimal and binary prefixes", "[units]") {
  CHECK(parse_bytes("64B") == Bytes(64));
  CHECK(parse_bytes("64KiB") == Bytes(65536));
  CHECK(parse_bytes("64KB") == Bytes(64000));
  CHECK(parse_bytes("1.5MiB") == Bytes(1572864));
  CHECK(parse_bytes("432GB") == Bytes(432'000'000'000ull));
  CHECK(parse_bytes("2TiB") == Bytes(2ull << 40));
  CHECK_THROWS_WITH(parse_bytes("0.5B"), Catch::Contains("whole number of bytes"));
  CHECK_THROWS_WITH(parse_bytes("64kb"), Catch::Contains("unknown unit \"kb\""));
}

TEST_CASE("bandwidths in bits and bytes per second", "[units]") {
  CHECK(parse_bandwidth("800Gb/s").bits_per_second() == 800'000'000'000ull);
  CHECK(parse_bandwidth("3.6TB/s").bits_per_second() == 28'800'000'000'000ull);
  CHECK(parse_bandwidth("200 Gb/s") == Bandwidth::gbit_per_second(200));
  CHECK(parse_bandwidth("64GB/s") == Bandwidth::gbyte_per_second(64));
  CHECK(parse_bandwidth("1GiB/s").bits_per_second() == 8ull << 30);
  CHECK_THROWS_WITH(parse_bandwidth("800Gbps"), Catch::Contains("unknown unit"));
  CHECK_THROWS_WITH(parse_bandwidth("800"), Catch::Contains("has no unit"));
}

TEST_CASE("frequencies and lengths", "[units]") {
  CHECK(parse_frequency("1.5GHz").as_hz() == 1'500'000'000ull);
  CHECK(parse_frequency("100MHz").period() == Time::ps(10'000));
  CHECK(parse_frequency("3GHz").period() == Time::ps(333));  // rounded to the nearest ps
  CHECK(parse_length("2m") == Length::m(2));
  CHECK(parse_length("50cm") == Length::mm(500));
  CHECK(parse_length("1.5m") == Length::um(1'500'000));
  CHECK_THROWS_WITH(parse_length("3ft"), Catch::Contains("unknown unit"));
}

TEST_CASE("transfer time is exact and rounds up to a whole picosecond", "[units]") {
  const Bandwidth x4 = parse_bandwidth("800Gb/s");
  CHECK(x4.transfer_time(Bytes(64)) == Time::ps(640));
  CHECK(x4.transfer_time(Bytes(640)) == Time::ps(6'400));
  CHECK(x4.transfer_time(Bytes(0)) == Time{});
  // 64 B at 9.8 Tb/s is 52.24 ps: rounded up.
  CHECK(parse_bandwidth("9.8Tb/s").transfer_time(Bytes(64)) == Time::ps(53));
  CHECK(Bandwidth().transfer_time(Bytes(1)) == Time::max());
}

TEST_CASE("canonical text parses back to the same value", "[units]") {
  for (const char* s : {"150ns", "2.5us", "1ms", "5s", "640ps", "0s", "12.345us", "1.001ns"}) {
    const Time t = parse_time(s);
    CHECK(parse_time(to_string(t)) == t);
  }
  CHECK(to_string(parse_time("2500ns")) == "2.5us");
  CHECK(to_string(parse_time("150ns")) == "150ns");
  CHECK(to_string(Bytes::KiB(64)) == "64KiB");
  CHECK(to_string(Bytes(432'000'000'000ull)) == "432GB");
  CHECK(to_string(Bytes(4100)) == "4100B");
  for (const char* s : {"800Gb/s", "3.6TB/s", "1.225TB/s", "7b/s"}) {
    const Bandwidth b = parse_bandwidth(s);
    CHECK(parse_bandwidth(to_string(b)) == b);
  }
  CHECK(to_string(parse_bandwidth("3.6TB/s")) == "3.6TB/s");
  CHECK(parse_frequency(to_string(parse_frequency("1.5GHz"))) == parse_frequency("1.5GHz"));
  CHECK(parse_length(to_string(parse_length("2.5m"))) == parse_length("2.5m"));
}

TEST_CASE("pretty times for people", "[units]") {
  CHECK(pretty(parse_time("259145358ps")) == "259.1 us");
  CHECK(pretty(parse_time("948ns")) == "948 ns");
  CHECK(pretty(parse_time("1.5s")) == "1.5 s");
  CHECK(pretty(Time::ps(12)) == "12 ps");
}
