// Access traces: parsing (with line-numbered errors), and format/parse round trips.
#include <catch2/catch.hpp>

#include "sim/pod/trace.hpp"

using namespace podsim;

TEST_CASE("a trace parses into accesses, comments and blank lines skipped", "[trace]") {
  const auto t = parse_trace(
      "# time_ns gpu op va size\n"
      "\n"
      "0 0 R 0x100000000000 64   # first\n"
      "12.5 1 W 0x100000200040 64\n"
      "12.5 0 A 4096 128\n"
      "  100.25   3   R   0x100000000100   256\n",
      "t.trace", 4);
  REQUIRE(t.size() == 4);
  CHECK(t[0] == TraceEntry{Time{}, 0, TraceOp::Read, 0x100000000000ull, 64});
  CHECK(t[1] == TraceEntry{Time::ps(12500), 1, TraceOp::Write, 0x100000200040ull, 64});
  CHECK(t[2] == TraceEntry{Time::ps(12500), 0, TraceOp::Atomic, 4096, 128});
  CHECK(t[3] == TraceEntry{Time::ps(100250), 3, TraceOp::Read, 0x100000000100ull, 256});
}

TEST_CASE("format_trace and parse_trace round-trip exactly", "[trace]") {
  const std::vector<TraceEntry> in = {
      {Time{}, 0, TraceOp::Read, 0x1000, 64},
      {Time::ps(1), 7, TraceOp::Write, 0xfff000, 128},
      {Time::ps(123456789), 7, TraceOp::Atomic, 0x100000000040ull, 64},
  };
  CHECK(parse_trace(format_trace(in), "x", 8) == in);
}

TEST_CASE("a malformed trace line is an error naming the file and line", "[trace]") {
  struct Case {
    const char* line;
    const char* says;
  };
  for (const Case& c : {
           Case{"0 0 R 0x1000", "expected 5 fields"},
           Case{"0 0 R 0x1000 64 extra", "expected 5 fields"},
           Case{"soon 0 R 0x1000 64", "time \"soon\" is not a number of ns"},
           Case{"-5 0 R 0x1000 64", "time \"-5\" is not a number of ns"},
           Case{"1e30 0 R 0x1000 64", "time \"1e30\": write ns in plain digits (no exponent)"},
           Case{"99999999999999999999 0 R 0x1000 64", "\"99999999999999999999ns\" is too large"},
           Case{"0.0001 0 R 0x1000 64",
                "time \"0.0001\" ns: \"0.0001ns\" is not a whole number of picoseconds"},
           Case{"0 8 R 0x1000 64", "not a GPU of the pod (0 to 7)"},
           Case{"0 x R 0x1000 64", "not a GPU of the pod"},
           Case{"0 0 L 0x1000 64", "op \"L\" is not R, W or A"},
           Case{"0 0 R 0xzz 64", "address \"0xzz\" is not a number"},
           Case{"0 0 R 0x1000 100", "size \"100\" is not 64, 128, 192 or 256"},
           Case{"0 0 R 0x1000 512", "size \"512\" is not 64"},
           Case{"0 0 R 0x1040 128", "not aligned to its size"},
           // 192 B at a multiple of 192 may cross a 256-byte block, and a page (0xfc0 + 192)
           Case{"0 0 W 0xfc0 192",
                "address 0xfc0 is not aligned to 256 bytes (a 192-byte "
                "access may not cross a 256-byte block)"},
           Case{"0 0 W 0x10c0 192", "not aligned to 256 bytes"},
       }) {
    INFO(c.line);
    const std::string text = std::string("# header\n0 0 R 0x2000 64\n") + c.line + "\n";
    try {
      parse_trace(text, "bad.trace", 8);
      FAIL("no error");
    } catch (const TraceError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("bad.trace:3: ") && Catch::Contains(c.says));
    }
  }
  CHECK(parse_trace("0 0 W 0x1100 192\n", "ok.trace", 8).at(0).size == 192);
}

TEST_CASE("time may not go back for one GPU, but GPUs interleave freely", "[trace]") {
  CHECK(parse_trace("10 0 R 0 64\n5 1 R 0 64\n20 0 R 0 64\n", "t", 2).size() == 3);
  CHECK_THROWS_WITH(parse_trace("10 0 R 0 64\n5 1 R 0 64\n9 0 R 0 64\n", "t", 2),
                    Catch::StartsWith("t:3: time goes back for GPU 0"));
}

TEST_CASE("a missing trace file is an error naming it", "[trace]") {
  CHECK_THROWS_WITH(load_trace("/nonexistent/x.trace"),
                    Catch::Contains("/nonexistent/x.trace") && Catch::Contains("cannot open"));
}

TEST_CASE("a trace line too long or with a NUL byte is refused, CRLF and a BOM are read",
          "[trace]") {
  auto error_of = [](const std::string& text) {
    try {
      parse_trace(text, "t.trace", 8);
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // /dev/zero, /dev/urandom: refused at the first line, not read whole.
  CHECK(error_of(std::string(1'000'000, '\0')) == "t.trace:1: a NUL byte: not a text trace");
  CHECK(error_of("0 0 R 0x0 64\n" + std::string(5000, 'x')) ==
        "t.trace:2: a line longer than 4096 bytes: not a trace");
  CHECK(error_of(std::string("0 0 R 0x0 6") + '\0' + "4\n") ==
        "t.trace:1: a NUL byte: not a text trace");
  // Windows line ends and a UTF-8 byte-order mark are read as a plain trace.
  const auto t = parse_trace("\xEF\xBB\xBF# t\r\n10 1 W 0x40 64\r\n", "t.trace", 8);
  REQUIRE(t.size() == 1);
  CHECK(t[0].gpu == 1);
  CHECK(t[0].size == 64);
}
