// Bytes between ranks: what a writer puts, a reader gets back in order; a reader never runs
// past its end, and says what it was reading when it would.
#include <catch2/catch.hpp>

#include "sim/core/byte_io.hpp"

using namespace podsim;

TEST_CASE("bytes written are read back in order, strings in place", "[bytes]") {
  ByteBuffer buf;
  ByteWriter w(buf);
  w.put(std::uint8_t{7});
  w.put(std::int64_t{-123456789012});
  w.str("pod.gpu3.vram.reads");
  const double d = 2.5;
  w.raw(&d, sizeof d);
  w.str("");
  ByteReader r(buf, "a test message");
  CHECK(r.get<std::uint8_t>() == 7);
  CHECK(r.get<std::int64_t>() == -123456789012);
  const std::string_view s = r.view();
  CHECK(s == "pod.gpu3.vram.reads");
  CHECK(reinterpret_cast<const unsigned char*>(s.data()) > buf.data());  // in place
  double back = 0;
  std::memcpy(&back, r.take(sizeof back), sizeof back);
  CHECK(back == 2.5);
  CHECK(r.str().empty());
  CHECK(r.done());
}

TEST_CASE("a reader that would run past its end throws, naming the message", "[bytes]") {
  ByteBuffer buf;
  ByteWriter w(buf);
  w.str("abcdef");
  for (std::size_t cut = 0; cut < buf.size(); ++cut) {
    ByteReader r(buf.data(), buf.data() + cut, "a message from rank 1");
    CHECK_THROWS_WITH(r.str(), "a message from rank 1 is cut short");
  }
  ByteReader r(buf, "x");
  r.str();
  CHECK_THROWS_WITH(r.get<std::uint32_t>(), "x is cut short");
  CHECK_THROWS_WITH(r.take(1), "x is cut short");
}
