// Natural order (sim/core/natural_order.hpp), which ranks the dispatcher's queues: the order of
// the keys' bytes is exactly natural_less's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/natural_order.hpp"
#include "sim/core/rng.hpp"

using podsim::natural_key;
using podsim::natural_less;

TEST_CASE("natural order: digit runs as numbers, fewer leading zeros first", "[natural]") {
  const std::vector<std::string> in_order = {
      "",       "0",     "00",    "1",           "01",           "2",      "10",  "a", "gpu2",
      "gpu2.a", "gpu02", "gpu10", "gpu10.port2", "gpu10.port10", "gpu100", "gpu~"};
  for (std::size_t i = 0; i < in_order.size(); ++i)
    for (std::size_t j = 0; j < in_order.size(); ++j) {
      INFO(in_order[i] << " vs " << in_order[j]);
      CHECK(natural_less(in_order[i], in_order[j]) == (i < j));
      CHECK((natural_key(in_order[i]) < natural_key(in_order[j])) == (i < j));
    }
}

TEST_CASE("natural keys order digit runs longer than 65,535 digits", "[natural]") {
  const std::string a(65'535, '1'), b = "0" + a, c(65'536, '1');
  CHECK(natural_less(a, b));
  CHECK(natural_key(a) < natural_key(b));
  CHECK(natural_less(b, c));
  CHECK(natural_key(b) < natural_key(c));
}

TEST_CASE("natural keys sort random names exactly as natural_less does", "[natural]") {
  // Names from a few letters, dots, bytes on both sides of the digits ('/' and ':'), and
  // digit runs with leading zeros, long runs and runs at either end.
  static constexpr char kChars[] = {'a', 'b', '.', '/', ':', '0', '0', '1', '2', '9', '\xff'};
  podsim::Rng rng(17);
  std::vector<std::string> names;
  for (int n = 0; n < 3000; ++n) {
    std::string s(rng.below(12), 'x');
    for (char& c : s)
      c = kChars[rng.below(sizeof kChars)];
    names.push_back(s);
  }
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    const std::string &a = names[i], &b = names[i + 1];
    INFO("'" << a << "' vs '" << b << "'");
    REQUIRE(natural_less(a, b) == (natural_key(a) < natural_key(b)));
    REQUIRE(natural_less(b, a) == (natural_key(b) < natural_key(a)));
  }
  std::vector<std::string> by_less = names, by_key = names;
  std::sort(by_less.begin(), by_less.end(),
            [](const std::string& a, const std::string& b) { return natural_less(a, b); });
  std::sort(by_key.begin(), by_key.end(), [](const std::string& a, const std::string& b) {
    return natural_key(a) < natural_key(b);
  });
  CHECK(by_less == by_key);
}
