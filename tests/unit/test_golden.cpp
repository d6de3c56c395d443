// Goldens: folding component stats together, digests, comparisons.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "sim/tools/golden.hpp"

using namespace podsim::tools;
namespace json = boost::json;

TEST_CASE("numbered path parts fold to '*'", "[golden]") {
  CHECK(fold_key("pod.gpu12.vram.reads") == "pod.gpu*.vram.reads");
  CHECK(fold_key("pod.fabric.plane3.switch0.port17.packets") ==
        "pod.fabric.plane*.switch*.port*.packets");
  CHECK(fold_key("pod.summary.remote_latency") == "pod.summary.remote_latency");
  CHECK(fold_key("pod.summary.messages.HELLO") == "pod.summary.messages.HELLO");
  CHECK(fold_key("a.123.b") == "a.123.b");  // all digits: an index kept as it is
}

TEST_CASE("condensing combines each kind of stat exactly", "[golden]") {
  const json::object stats = json::parse(R"({
    "pod.gpu0.vram.reads": {"unit": "count", "desc": "d", "value": 5},
    "pod.gpu1.vram.reads": {"unit": "count", "desc": "d", "value": 7},
    "pod.gpu0.vram.balance": {"unit": "ratio", "desc": "d", "value": 0.5},
    "pod.gpu1.vram.balance": {"unit": "ratio", "desc": "d", "value": 0.25},
    "pod.gpu0.lat": {"unit": "ns", "desc": "d", "count": 2, "mean": 10, "min": 5, "max": 15,
                     "p50": 5, "p90": 15, "p99": 15, "p999": 15},
    "pod.gpu1.lat": {"unit": "ns", "desc": "d", "count": 1, "mean": 40, "min": 40, "max": 40,
                     "p50": 40, "p90": 40, "p99": 40, "p999": 40},
    "pod.gpu0.ch": {"unit": "bytes", "desc": "d", "values": [1, 2]},
    "pod.gpu1.ch": {"unit": "bytes", "desc": "d", "values": [10, 20]},
    "pod.gpu0.bd": {"unit": "ns", "desc": "d", "samples": 1, "mean_parts": {"a": 2, "b": 4}},
    "pod.gpu1.bd": {"unit": "ns", "desc": "d", "samples": 3, "mean_parts": {"a": 6, "b": 0}},
    "pod.summary.x": {"unit": "count", "desc": "d", "value": 3}
  })")
                                 .as_object();
  const json::object c = condense_stats(stats);
  CHECK(c.size() == 6);
  CHECK(c.at("pod.gpu*.vram.reads").at("sum") == 12);
  CHECK(c.at("pod.gpu*.vram.reads").at("components") == 2);
  CHECK(c.at("pod.gpu*.vram.balance").at("min").as_double() == 0.25);
  CHECK(c.at("pod.gpu*.vram.balance").at("max").as_double() == 0.5);
  CHECK(c.at("pod.gpu*.lat").at("count") == 3);
  CHECK(c.at("pod.gpu*.lat").at("mean").as_double() == 20.0);  // (2*10 + 40) / 3
  CHECK(c.at("pod.gpu*.lat").at("min").as_double() == 5.0);
  CHECK(c.at("pod.gpu*.lat").at("max").as_double() == 40.0);
  CHECK(json::serialize(c.at("pod.gpu*.ch").at("values")) == "[1.1E1,2.2E1]");
  CHECK(c.at("pod.gpu*.bd").at("samples") == 4);
  CHECK(c.at("pod.gpu*.bd").at("mean_parts").at("a").as_double() == 5.0);  // (2 + 18) / 4
  // A key that names one component keeps its values, less unit and description.
  CHECK(json::serialize(c.at("pod.summary.x")) == R"({"value":3})");
}

TEST_CASE("comparisons: integers exact, other numbers to 1e-9, absent keys named", "[golden]") {
  const json::object g = json::parse(R"({"a": {"value": 3}, "b": {"value": 1.0},
                                         "c": {"value": 2}})")
                             .as_object();
  CHECK(compare_condensed(g, g).empty());
  auto a = g;
  a["b"].as_object()["value"] = 1.0 + 1e-12;  // within 1e-9
  CHECK(compare_condensed(g, a).empty());
  a["a"].as_object()["value"] = 4;
  a["b"].as_object()["value"] = 1.001;
  a.erase("c");
  a["d"] = json::object{{"value", 1}};
  const auto d = compare_condensed(g, a);
  REQUIRE(d.size() == 4);
  CHECK(d[0].key == "a.value");
  CHECK(d[0].golden == "3");
  CHECK(d[0].actual == "4");
  CHECK(d[1].key == "b.value");
  CHECK(d[2].key == "c.value");
  CHECK(d[2].actual == "(absent)");
  CHECK(d[3].key == "d.value");
  CHECK(d[3].golden == "(absent)");
}

TEST_CASE("the digest sees any value but not the words", "[golden]") {
  json::object s = json::parse(R"({"x": {"unit": "count", "desc": "d", "value": 3}})").as_object();
  const std::string d = stats_digest(s);
  CHECK(d.size() == 16);
  s["x"].as_object()["desc"] = "another description";
  CHECK(stats_digest(s) == d);
  s["x"].as_object()["value"] = 4;
  CHECK(stats_digest(s) != d);
}
