// VRAM's functional data: written bytes come back, everything else reads as zero, and only
// written 64-byte lines are kept.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "models/vram/data_store.hpp"
#include "sim/core/rng.hpp"

using podsim::Rng;
using podsim::VramDataStore;

TEST_CASE("written bytes read back, the rest of a line and untouched memory read zero", "[data]") {
  VramDataStore s;
  std::vector<unsigned char> in(200), out(300, 0xFF);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<unsigned char>(i + 1);
  s.write(1000, in.data(), in.size());  // straddles lines 15..18
  CHECK(s.lines() == 4);
  s.read(900, out.data(), out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint64_t pa = 900 + i;
    const unsigned char want = pa >= 1000 && pa < 1200 ? in[pa - 1000] : 0;
    INFO(pa);
    CHECK(out[i] == want);
  }
}

TEST_CASE("erasing a page forgets its lines only, and freed lines are reused", "[data]") {
  VramDataStore s;
  const unsigned char x[64] = {1};
  s.write(4096 * 3 + 64, x, 64);
  s.write(4096 * 4, x, 64);
  CHECK(s.lines() == 2);
  s.erase_page(3);
  CHECK(s.lines() == 1);
  unsigned char y[64] = {9};
  s.read(4096 * 3 + 64, y, 64);
  CHECK(y[0] == 0);
  s.read(4096 * 4, y, 64);
  CHECK(y[0] == 1);
  s.write(4096 * 5, x, 64);
  CHECK(s.lines() == 2);
  s.clear();
  CHECK(s.lines() == 0);
}

TEST_CASE("a store holding many chunks of lines keeps every line it was given", "[data]") {
  // 20,000 lines: many 1,024-line chunks, and an index grown past the huge-page sizes.
  VramDataStore s;
  std::map<std::uint64_t, unsigned char> want;  // line -> its fill byte
  Rng rng(11);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t line = rng.below(1u << 20);
    const auto v = static_cast<unsigned char>(rng.below(255) + 1);
    unsigned char in[64];
    std::fill(std::begin(in), std::end(in), v);
    s.write(line * 64, in, 64);
    want[line] = v;
  }
  CHECK(s.lines() == want.size());
  for (const auto& [line, v] : want) {
    unsigned char out[64];
    s.read(line * 64, out, 64);
    INFO(line);
    REQUIRE(std::all_of(std::begin(out), std::end(out), [&](unsigned char c) { return c == v; }));
  }
  s.clear();
  CHECK(s.lines() == 0);
}

TEST_CASE("erasing pages among scattered writes forgets exactly their lines", "[data]") {
  // Writes of 1-300 bytes at random places over 64 pages, pages erased between them; checked
  // against a byte-by-byte model, with the lines held counted.
  VramDataStore s;
  std::map<std::uint64_t, unsigned char> bytes;  // written and not erased since
  Rng rng(5);
  for (int round = 0; round < 4000; ++round) {
    if (rng.below(4) == 0) {
      const std::uint64_t page = rng.below(64);
      s.erase_page(page);
      bytes.erase(bytes.lower_bound(page * 4096), bytes.lower_bound((page + 1) * 4096));
      continue;
    }
    const std::uint64_t pa = rng.below(64 * 4096 - 300);
    const std::size_t n = 1 + rng.below(300);
    std::vector<unsigned char> in(n);
    for (auto& c : in)
      c = static_cast<unsigned char>(1 + rng.below(255));
    s.write(pa, in.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      bytes[pa + i] = in[i];
  }
  std::map<std::uint64_t, bool> lines;
  for (const auto& kv : bytes)
    lines[kv.first / 64] = true;
  CHECK(s.lines() == lines.size());
  std::vector<unsigned char> out(64 * 4096);
  s.read(0, out.data(), out.size());
  for (std::uint64_t pa = 0; pa < out.size(); ++pa) {
    const auto it = bytes.find(pa);
    const unsigned char want = it == bytes.end() ? 0 : it->second;
    if (out[pa] != want) FAIL("byte " << pa << " reads " << int(out[pa]) << ", not " << int(want));
  }
  for (std::uint64_t page = 0; page < 64; ++page)
    s.erase_page(page);
  CHECK(s.lines() == 0);
}
