// The one JSON format podsim writes (sim/core/json_write.hpp): streamed and from a document.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "sim/core/json_write.hpp"
#include "sim/core/rng.hpp"

using podsim::config::PrettyJson;
using podsim::config::to_pretty_json;

TEST_CASE("the pretty format: members a line each, scalar arrays on one line", "[json]") {
  const boost::json::value doc =
      boost::json::parse(R"({"a": 1, "b": {}, "c": [], "d": [1, 2.5, "x", true, null],
    "e": [[1, 2], {"f": -3}], "g": {"h": {"i": 0.1}}})");
  CHECK(to_pretty_json(doc) == R"({
  "a": 1,
  "b": {},
  "c": [],
  "d": [1, 2.5, "x", true, null],
  "e": [
    [1, 2],
    {
      "f": -3
    }
  ],
  "g": {
    "h": {
      "i": 0.1
    }
  }
}
)");
}

TEST_CASE("streaming writes the same text as the document", "[json]") {
  const boost::json::value doc = boost::json::parse(
      R"({"n": 18446744073709551615, "m": -9223372036854775808, "x": 812.5, "list": [[0.5, 1, 7]],
          "o": {"p": [], "q": {}}, "s": "t"})");
  std::string text;
  PrettyJson w(text);
  w.begin_object();
  w.member("n", std::uint64_t{18446744073709551615ull});
  w.member("m", std::numeric_limits<std::int64_t>::min());
  w.member("x", 812.5);
  w.key("list");
  w.begin_array(false);
  w.begin_array(true);
  w.value(0.5);
  w.value(std::uint64_t{1});
  w.value(std::int64_t{7});
  w.end_array();
  w.end_array();
  w.key("o");
  w.begin_object();
  w.key("p");
  w.begin_array(true);
  w.end_array();
  w.key("q");
  w.begin_object();
  w.end_object();
  w.end_object();
  w.member("s", "t");
  w.end_object();
  text += '\n';
  CHECK(text == to_pretty_json(doc));
  CHECK(boost::json::parse(text) == doc);
}

TEST_CASE("numbers read as people write them, and what JSON cannot hold is null", "[json]") {
  std::string text;
  PrettyJson w(text);
  w.begin_array(true);
  for (double d :
       {812.5, 1e21, 0.1, -0.0, 3.0, std::nan(""), std::numeric_limits<double>::infinity()})
    w.value(d);
  w.end_array();
  CHECK(text == "[812.5, 1e+21, 0.1, -0, 3, null, null]");
}

TEST_CASE("strings and keys are escaped exactly as Boost.JSON escapes them", "[json]") {
  std::string every;
  for (int c = 0; c < 256; ++c)
    every += static_cast<char>(c);
  std::string text;
  PrettyJson w(text);
  w.begin_object();
  w.member(every, every);
  w.end_object();
  const std::string quoted = boost::json::serialize(boost::json::value(every));
  CHECK(text == "{\n  " + quoted + ": " + quoted + "\n}");
}

TEST_CASE("strings of any length with escapes anywhere are escaped as Boost.JSON does", "[json]") {
  // The writer scans eight bytes at a time: escapes at every offset within and across the
  // eight, bytes beside them that look alike to a word-wide test (0x20, 0x21, 0x5b-0x5d,
  // 0x7f-0xff), and tails of every length.
  static constexpr unsigned char kBytes[] = {'a',  'Z',  ' ',  '!',  '"',  '#',  '[',
                                             '\\', ']',  0x00, 0x01, 0x08, 0x0a, 0x1f,
                                             0x7f, 0x80, 0xa2, 0xdc, 0xff};
  podsim::Rng rng(3);
  for (int round = 0; round < 5000; ++round) {
    std::string s(rng.below(40), 'x');
    for (char& c : s)
      c = rng.below(3) == 0 ? static_cast<char>(kBytes[rng.below(sizeof kBytes)]) : 'q';
    std::string text;
    PrettyJson w(text);
    w.value(s);
    INFO("round " << round);
    REQUIRE(text == boost::json::serialize(boost::json::value(s)));
  }
}

TEST_CASE("calls out of order are refused, not written as broken JSON", "[json]") {
  std::string text;
  PrettyJson w(text);
  w.begin_object();
  CHECK_THROWS_AS(w.value(std::uint64_t{1}), std::logic_error);  // no key
  CHECK_THROWS_AS(w.end_array(), std::logic_error);              // an object is open
  w.key("a");
  CHECK_THROWS_AS(w.key("b"), std::logic_error);  // a key after a key
  CHECK_THROWS_AS(w.end_object(), std::logic_error);
  w.begin_array(true);
  CHECK_THROWS_AS(w.key("c"), std::logic_error);  // a key in an array
  CHECK_THROWS_AS(w.begin_object(), std::logic_error);
  CHECK_THROWS_AS(w.begin_array(true), std::logic_error);
  CHECK_THROWS_AS(w.end_object(), std::logic_error);
  w.end_array();
  w.end_object();
  CHECK(text == "{\n  \"a\": []\n}");
  CHECK_THROWS_AS(w.end_object(), std::logic_error);  // nothing open
  PrettyJson fresh(text);
  CHECK_THROWS_AS(fresh.key("d"), std::logic_error);
}

TEST_CASE("members written apart and spliced in give the text written whole", "[json]") {
  // What a split run does with stats.json: ranks write some members of the "stats" object
  // (two levels deep) apart; the document's writer splices them in where they belong.
  auto member = [](PrettyJson& w, const std::string& k, std::uint64_t v) {
    w.key(k);
    w.begin_object();
    w.member("value", v);
    w.key("list");
    w.begin_array(true);
    w.value(v);
    w.end_array();
    w.end_object();
  };
  // A document {"stats": {...}} whose members `fill` writes.
  auto document = [](auto&& fill) {
    std::string text;
    PrettyJson w(text);
    w.begin_object();
    w.key("stats");
    w.begin_object();
    fill(w);
    w.end_object();
    w.end_object();
    return text;
  };
  const std::string whole = document([&](PrettyJson& w) {
    for (std::uint64_t i = 0; i < 5; ++i)
      member(w, "s" + std::to_string(i), i);
  });
  auto apart = [&](std::uint64_t from, std::uint64_t to) {
    std::string text;
    PrettyJson w(text);
    w.continue_object(2);
    for (std::uint64_t i = from; i < to; ++i)
      member(w, "s" + std::to_string(i), i);
    return text;
  };
  SECTION("spliced first, in the middle and last, and nothing spliced") {
    CHECK(document([&](PrettyJson& w) {
            w.splice_members(apart(0, 2));  // the object's first members: no comma before them
            member(w, "s2", 2);
            w.splice_members(apart(3, 3));
            w.splice_members(apart(3, 5));
          }) == whole);
  }
  SECTION("an object of spliced members only") {
    CHECK(document([&](PrettyJson& w) { w.splice_members(apart(0, 5)); }) == whole);
  }
  SECTION("text that does not continue an object, or spliced where no member can go") {
    std::string text;
    PrettyJson w(text);
    w.begin_object();
    CHECK_THROWS_AS(w.splice_members("\"a\": 1"), std::logic_error);
    w.key("k");
    CHECK_THROWS_AS(w.splice_members(apart(0, 1)), std::logic_error);  // after a key
    w.begin_array(false);
    CHECK_THROWS_AS(w.splice_members(apart(0, 1)), std::logic_error);  // in an array
    CHECK_THROWS_AS(w.continue_object(2), std::logic_error);           // a writer that began
  }
}

TEST_CASE("a document drained in pieces is the document written whole", "[json]") {
  std::string whole, piece, drained;
  std::size_t pieces = 0;
  for (std::string* out : {&whole, &piece}) {
    PrettyJson w(*out);
    if (out == &piece)
      w.drain_every(100, [&](std::string& t) {
        CHECK(t.size() >= 100);
        drained += t;
        t.clear();
        ++pieces;
      });
    w.begin_object();
    for (int i = 0; i < 200; ++i)
      w.member("key" + std::to_string(i), static_cast<std::int64_t>(i) * 7919);
    w.end_object();
  }
  CHECK(pieces > 10);
  CHECK(drained + piece == whole);
}
