#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "sim/core/config_io.hpp"
#include "sim/core/json_write.hpp"
#include "sim/pod/pod_config_io.hpp"

using namespace podsim;
using config::ConfigDoc;
using config::ConfigError;

namespace {

PodConfig read(const std::string& text, std::vector<std::string> sets = {}) {
  ConfigDoc doc = ConfigDoc::from_text(text, "test.json");
  for (const auto& s : sets)
    doc.apply_override(s);
  return read_pod_config(doc);
}

// The error a config gives: its source, key path and message.
ConfigError error_of(const std::string& text, std::vector<std::string> sets = {}) {
  try {
    read(text, std::move(sets));
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a config error for " << text);
  return ConfigError("", "", "");
}

}  // namespace

TEST_CASE("an empty config is the default pod", "[config]") {
  PodConfig c = read("{}");
  CHECK(c.pod.gpus == 8);
  CHECK(c.fabric.switch_.latency == Time::ns(150));
  CHECK(c.fabric.port.rate() == parse_bandwidth("800Gb/s"));
  CHECK(c.workload.initiators.empty());
}

TEST_CASE("values are read into their unit types", "[config]") {
  PodConfig c = read(R"({
    // comments and trailing commas are allowed
    "pod": {"gpus": 16,},
    "fabric": {"switch": {"latency": "200ns", "ports": 32}, "link": {"cable_length": "3.5m"}},
    "gpu": {"vram": {"capacity": "192GiB"}},
    "workload": {"initiators": [0, 3], "traffic": {"read_fraction": 1}},
  })");
  CHECK(c.pod.gpus == 16);
  CHECK(c.fabric.switch_.latency == Time::ns(200));
  CHECK(c.fabric.switch_.ports == 32);
  CHECK(c.fabric.link.cable_length == Length::mm(3500));
  CHECK(c.gpu.vram.capacity == Bytes::GiB(192));
  CHECK(c.workload.initiators == std::vector<std::uint32_t>{0, 3});
  CHECK(c.workload.traffic.read_fraction == 1.0);
}

TEST_CASE("an unknown key names the file, its path and the keys that exist", "[config]") {
  auto e = error_of(R"({"fabric": {"switch": {"latency": "150ns", "latncy": "1ns"}}})");
  CHECK(e.source() == "test.json");
  CHECK(e.path() == "fabric.switch.latncy");
  CHECK_THAT(e.message(), Catch::Contains("unknown key") && Catch::Contains("latency"));
  CHECK_THAT(std::string(e.what()), Catch::StartsWith("test.json: fabric.switch.latncy: "));
  CHECK(error_of(R"({"gpus": 8})").path() == "gpus");
}

TEST_CASE("a wrong type says what was expected and what was found", "[config]") {
  auto e = error_of(R"({"fabric": {"switch": {"latency": 150}}})");
  CHECK(e.path() == "fabric.switch.latency");
  CHECK_THAT(e.message(), Catch::Contains("expected a time such as \"150ns\"") &&
                              Catch::Contains("got an integer 150"));
  CHECK_THAT(error_of(R"({"pod": {"gpus": "8"}})").message(),
             Catch::Contains("integer") && Catch::Contains("got a string \"8\""));
  CHECK_THAT(error_of(R"({"pod": {"gpus": 8.5}})").message(),
             Catch::Contains("integer") && Catch::Contains("got a number 8.5"));
  CHECK_THAT(error_of(R"({"pod": {"gpus": -3}})").message(), Catch::Contains("non-negative"));
  CHECK_THAT(error_of(R"({"pod": 8})").message(), Catch::Contains("expected an object"));
  CHECK_THAT(error_of(R"({"workload": {"initiators": 3}})").message(),
             Catch::Contains("expected an array"));
  CHECK(error_of(R"({"workload": {"initiators": [0, "x"]}})").path() == "workload.initiators.1");
}

TEST_CASE("a bad unit names the unit and the ones allowed", "[config]") {
  auto e = error_of(R"({"gpu": {"vram": {"capacity": "192 GiBs"}}})");
  CHECK(e.path() == "gpu.vram.capacity");
  CHECK_THAT(e.message(), Catch::Contains("unknown unit \"GiBs\"") && Catch::Contains("KiB"));
}

TEST_CASE("out-of-range values give the allowed range", "[config]") {
  auto e = error_of(R"({"pod": {"gpus": 1}})");
  CHECK(e.path() == "pod.gpus");
  CHECK_THAT(e.message(), Catch::Contains("at least 2") && Catch::Contains("got 1"));
  CHECK_THAT(error_of(R"({"workload": {"traffic": {"read_fraction": 1.5}}})").message(),
             Catch::Contains("at most 1"));
  CHECK(error_of(R"({"fabric": {"port": {"lanes": 3}}})").path() == "fabric.port.lanes");
  CHECK(error_of(R"({"gpu": {"gpuvm": {"l2": {"entries": 10, "ways": 4}}}})").path() ==
        "gpu.gpuvm.l2.ways");
  CHECK_THAT(error_of(R"({"fabric": {"switch": {"latency": "1ms"}}, "pod": {"addr_mode": "x"}})")
                 .message(),
             Catch::Contains("\"x\" is not one of \"source_aliasing\""));
}

TEST_CASE("checks across sections name the key at fault", "[config]") {
  auto e = error_of(R"({"pod": {"gpus": 72}})");
  CHECK(e.path() == "pod.gpus");
  CHECK_THAT(e.message(), Catch::Contains("fabric.switch.ports is 64"));
  CHECK(error_of(R"({"pod": {"gpus": 4}, "workload": {"initiators": [0, 4]}})").path() ==
        "workload.initiators.1");
  // More peers than a GPU has is an error, not every peer (0 says that).
  const ConfigError peers = error_of(R"({"pod": {"gpus": 8}, "workload": {"peers": 8}})");
  CHECK(peers.path() == "workload.peers");
  CHECK_THAT(peers.message(), Catch::Contains("at most the 7 other GPUs"));
  CHECK(error_of(R"({"pod": {"gpus": 8, "vpod_size": 4}, "workload": {"peers": 4}})").path() ==
        "workload.peers");
  CHECK_NOTHROW(read(R"({"pod": {"gpus": 8}, "workload": {"peers": 7}})"));
}

TEST_CASE("an NPA window must reach past where its mode's ranges start", "[config][driver]") {
  // Source-aliasing ranges start at 8 MiB (page 0x800), source-identification ones at 2 MiB.
  const auto e = error_of(R"({"gpu": {"driver": {"npa_window": "8MiB"}}})");
  CHECK(e.path() == "gpu.driver.npa_window");
  CHECK_THAT(e.message(), Catch::Contains("start at 8 MiB") && Catch::Contains("larger"));
  // Above the receive pages of 1,024 senders (pages 512 + 2 x 1024): at 10 MiB.
  const auto big = error_of(R"({"gpu": {"driver": {"accel_max": 1024, "npa_window": "10MiB"}}})");
  CHECK(big.path() == "gpu.driver.npa_window");
  CHECK_THAT(big.message(), Catch::Contains("start at 10 MiB"));
  CHECK(read(R"({"gpu": {"driver": {"accel_max": 1024, "npa_window": "12MiB"}}})")
            .gpu.driver.npa_window == podsim::Bytes::MiB(12));
  CHECK(read(R"({"gpu": {"driver": {"npa_window": "10MiB"}}})").gpu.driver.npa_window ==
        podsim::Bytes::MiB(10));
  CHECK(read(R"({"pod": {"addr_mode": "source_identification"},
                 "gpu": {"driver": {"npa_window": "4MiB"}}})")
            .gpu.driver.npa_window == podsim::Bytes::MiB(4));
}

TEST_CASE("reintroduced bugs are read by name into the driver's set, and other names are errors",
          "[config][driver]") {
  const PodConfig c = read(R"({"gpu": {"driver": {"reintroduce_bugs": ["B7", "B1"]}}})");
  const driver::Bugs bugs = c.gpu.driver.bugs();
  CHECK(bugs.count() == 2);
  CHECK(bugs.test(static_cast<std::size_t>(driver::Bug::B1)));
  CHECK(bugs.test(static_cast<std::size_t>(driver::Bug::B7)));
  CHECK_FALSE(bugs.test(static_cast<std::size_t>(driver::Bug::B3)));
  auto e = error_of(R"({"gpu": {"driver": {"reintroduce_bugs": ["B1", "B9"]}}})");
  CHECK(e.path() == "gpu.driver.reintroduce_bugs.1");
  CHECK_THAT(e.message(), Catch::Contains("\"B9\" is not one of B1, B2, B3, B4, B5, B6, B7, B8"));
}

TEST_CASE("a scenario step's expected errno and alloc domain are names checked when read",
          "[config][scenario]") {
  auto e = error_of(R"({"workload": {"kind": "scenario", "steps": [{"op": "alloc", "size": "4KiB",)"
                    R"( "name": "b", "expect": "EAGIAN"}]}})");
  CHECK(e.path() == "workload.steps.0.expect");
  CHECK_THAT(e.message(), Catch::Contains("\"EAGIAN\" is not one of \"OK\""));
  e = error_of(R"({"workload": {"kind": "scenario", "steps": [{"op": "alloc", "size": "4KiB",)"
               R"( "name": "b", "domain": "npa"}]}})");
  CHECK(e.path() == "workload.steps.0.domain");
  const PodConfig c =
      read(R"({"workload": {"kind": "scenario", "steps": [{"op": "alloc", "size": "4KiB",)"
           R"( "name": "b", "domain": "gtt", "expect": "EOPNOTSUPP"}]}})");
  CHECK(c.workload.steps.at(0).expect == driver::Errno::OpNotSupp);
  CHECK(c.workload.steps.at(0).domain == AllocDomain::Gtt);
}

TEST_CASE("JSON syntax errors give line and column", "[config]") {
  try {
    ConfigDoc::from_text("{\n  \"pod\": {\"gpus\": 8,,}\n}", "bad.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.source() == "bad.json");
    CHECK_THAT(e.message(), Catch::Contains("line 2, column"));
  }
  CHECK_THROWS_AS(ConfigDoc::from_text("[1, 2]", "x.json"), ConfigError);
  CHECK_THROWS_AS(ConfigDoc::from_text("{} {}", "x.json"), ConfigError);
}

TEST_CASE("overrides (--set) follow the same rules and say they came from --set", "[config]") {
  PodConfig c = read("{}", {"fabric.switch.latency=250ns", "pod.gpus=4", "workload.initiators=[1]",
                            "name=\"my pod\""});
  CHECK(c.fabric.switch_.latency == Time::ns(250));
  CHECK(c.pod.gpus == 4);
  CHECK(c.workload.initiators == std::vector<std::uint32_t>{1});
  CHECK(c.name == "my pod");

  auto e = error_of("{}", {"fabric.switch.latncy=1ns"});
  CHECK(e.source() == "--set fabric.switch.latncy=1ns");
  CHECK(e.path() == "fabric.switch.latncy");
  auto bad_unit = error_of("{}", {"fabric.switch.latency=200 nanos"});
  CHECK(bad_unit.source() == "--set fabric.switch.latency=200 nanos");
  CHECK_THAT(bad_unit.message(), Catch::Contains("unknown unit"));
  CHECK(error_of("{}", {"fabric.swtch.latency=1ns"}).path() == "fabric.swtch");
  CHECK_THAT(error_of("{}", {"pod.gpus=x"}).message(), Catch::Contains("integer, got a string"));
  CHECK_THROWS_WITH(read(R"({"pod": {"gpus": 8}})", {"pod.gpus.x=1"}),
                    Catch::Contains("is not a section"));
  CHECK_THROWS_WITH(read("{}", {"nokey"}), Catch::Contains("expected key.path=value"));
  CHECK_THROWS_WITH(read(R"({"workload": {"initiators": [0]}})", {"workload.initiators.5=1"}),
                    Catch::Contains("expected an index below 1"));
  // A later override wins; errors elsewhere still name the file.
  CHECK(read("{}", {"pod.gpus=4", "pod.gpus=6"}).pod.gpus == 6);
  CHECK(error_of(R"({"bogus": 1})", {"pod.gpus=4"}).source() == "test.json");
}

TEST_CASE("the resolved config reproduces the config exactly", "[config]") {
  PodConfig c = read(R"({"pod": {"gpus": 16}, "fabric": {"switch": {"latency": "123.456ns"}},
                         "gpu": {"vram": {"channel_bandwidth": "1.225TB/s"}},
                         "workload": {"traffic": {"read_fraction": 0.3}}})");
  const std::string once = config::to_pretty_json(write_pod_config(c));
  PodConfig again = read(once);
  const std::string twice = config::to_pretty_json(write_pod_config(again));
  CHECK(once == twice);
  CHECK(again.fabric.switch_.latency == Time::ps(123'456));
  CHECK(again.workload.traffic.read_fraction == 0.3);
  CHECK(again.gpu.vram.channel_bandwidth == c.gpu.vram.channel_bandwidth);
}

TEST_CASE("the reference lists every key with its default", "[config]") {
  const std::string ref = pod_config_reference();
  for (const char* key : {"`pod.gpus`", "`fabric.switch.latency`", "`gpu.vram.capacity`",
                          "`workload.traffic.outstanding`", "`gpu.driver.response_timeout`"})
    CHECK_THAT(ref, Catch::Contains(key));
  CHECK_THAT(ref, Catch::Contains("`\"150ns\"`"));
}

TEST_CASE("docs/config-reference.md is current", "[config][docs]") {
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/docs/config-reference.md");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  INFO("regenerate it: see the header of docs/config-reference.md");
  CHECK_THAT(ss.str(), Catch::EndsWith(pod_config_reference()));
}

TEST_CASE("topologies the switches cannot build are config errors", "[config][topology]") {
  auto e = error_of(R"({"pod": {"gpus": 16}, "fabric": {"switch": {"ports": 8}}})");
  CHECK(e.path() == "pod.gpus");
  CHECK_THAT(e.message(), Catch::Contains("fabric.switch.ports is 8"));
  auto ls = error_of(R"({"pod": {"gpus": 64}, "fabric": {"topology": "leaf_spine",
                        "leaf_spine": {"gpus_per_leaf": 16, "spines": 56}}})");
  CHECK(ls.path() == "fabric.leaf_spine.spines");
  CHECK_THAT(ls.message(), Catch::Contains("exceed fabric.switch.ports (64)"));
  auto radix = error_of(R"({"pod": {"gpus": 1024}, "gpu": {"driver": {"accel_max": 1024}},
                           "fabric": {"topology": "leaf_spine",
                           "leaf_spine": {"gpus_per_leaf": 8, "spines": 8}}})");
  CHECK(radix.path() == "fabric.leaf_spine.gpus_per_leaf");
  CHECK_THAT(radix.message(), Catch::Contains("128 leaves need 128-port spines"));
  CHECK(error_of(R"({"pod": {"gpus": 1025}})").path() == "pod.gpus");
  CHECK(error_of(R"({"fabric": {"link": {"flit_error_rate": 0.1, "bit_error_rate": 1e-9}}})")
            .path() == "fabric.link.bit_error_rate");
  CHECK(error_of(R"({"fabric": {"planes": 65}})").path() == "fabric.planes");
  // A pod that fits is fine.
  PodConfig ok = read(R"({"pod": {"gpus": 1024}, "gpu": {"driver": {"accel_max": 1024}},
                         "fabric": {"topology": "leaf_spine"}})");
  CHECK(ok.fabric.leaf_spine.gpus_per_leaf == 32);
}

TEST_CASE("VRAM must hold more than the rings' receive pages", "[config][vram]") {
  // 1,024 GPUs in source aliasing: 2,048 receive pages, four 2 MiB blocks.
  const std::string pod = R"("pod": {"gpus": 1024}, "fabric": {"switch": {"ports": 1024}})";
  const auto e = error_of("{" + pod + R"(, "gpu": {"driver": {"accel_max": 1024},
                                          "vram": {"capacity": "8MiB"}}})");
  CHECK(e.path() == "gpu.vram.capacity");
  CHECK_THAT(e.message(), Catch::Contains("8 MiB the rings' receive pages take"));
  CHECK(read("{" + pod + R"(, "gpu": {"driver": {"accel_max": 1024},
                                     "vram": {"capacity": "10MiB"}}})")
            .gpu.vram.capacity == podsim::Bytes::MiB(10));
}

TEST_CASE("a key given twice in one object is an error naming both places", "[config]") {
  const ConfigError e = error_of("{\"pod\": {\"gpus\": \"5 parsecs\",\n  \"gpus\": 4}}");
  CHECK_THAT(std::string(e.what()), Catch::Contains("test.json") &&
                                        Catch::Contains("line 2, column 3") &&
                                        Catch::Contains("\"gpus\" appears twice") &&
                                        Catch::Contains("first at line 1, column 10"));
  CHECK(e.path() == "pod.gpus");  // where it is, not only its name
  CHECK(error_of(R"({"workload": {"steps": [{"gpu": 0}, {"gpu": 1, "op": "alloc", "gpu": 2}]}})")
            .path() == "workload.steps.1.gpu");
  // The same key in two objects, in an array, or inside a string is not a duplicate.
  CHECK_NOTHROW(read(R"({"pod": {"gpus": 4}, "fabric": {"switch": {"ports": 64}},
    // "gpus" in a comment, "pod" in a string: "name": "pod"
    "name": "a \"pod\" of \"pod\"s"})"));
  // Spelt with an escape, it is the same key.
  CHECK_THAT(std::string(error_of(R"({"pod": {"gpus": "5 parsecs", "gpu\u0073": 4}})").what()),
             Catch::Contains("\"gpus\" appears twice"));
  const ConfigError set = error_of("{}", {R"(pod={"gpus": 2, "gpus": 3})"});
  CHECK_THAT(std::string(set.what()),
             Catch::Contains("--set") && Catch::Contains("\"gpus\" appears twice"));
  CHECK(set.path() == "pod.gpus");
}

TEST_CASE("a NUL character in a key or a string is an error naming where", "[config]") {
  const ConfigError value = error_of(R"({"workload": {"traffic": {"trace": "a\u0000b"}}})");
  CHECK_THAT(std::string(value.what()),
             Catch::Contains("workload.traffic.trace") && Catch::Contains("NUL"));
  const ConfigError key = error_of(R"({"pod": {"g\u0000pus": 4}})");
  CHECK_THAT(std::string(key.what()),
             Catch::Contains("pod") && Catch::Contains("g\\u0000pus") && Catch::Contains("NUL"));
}

TEST_CASE("a zero bandwidth is shown in Gb/s", "[config][units]") {
  const ConfigError e = error_of("{}", {"fabric.port.lane_rate=0Gb/s"});
  CHECK_THAT(std::string(e.what()), Catch::Contains("got 0Gb/s"));
}

TEST_CASE(
    "a receive buffer smaller than the workload's largest packet is an error naming the "
    "minimum",
    "[config]") {
  // 64 B accesses: 16 B of header, 80 B packets.
  const ConfigError small = error_of("{}", {"fabric.port.rx_buffer=79B"});
  CHECK_THAT(std::string(small.what()),
             Catch::Contains("fabric.port.rx_buffer") && Catch::Contains("at least 80B, got 79B"));
  CHECK_NOTHROW(read("{}", {"fabric.port.rx_buffer=80B"}));
  // 256 B accesses need 272 B.
  const ConfigError big =
      error_of("{}", {"fabric.port.rx_buffer=200B", "workload.traffic.access_size=256B"});
  CHECK_THAT(std::string(big.what()), Catch::Contains("at least 272B"));
  // A scenario's access step may ask for more than the traffic section.
  const ConfigError step = error_of(R"({"fabric": {"port": {"rx_buffer": "100B"}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "4KiB", "name": "b"},
      {"gpu": 0, "op": "map", "buffer": "b", "name": "m"},
      {"gpu": 0, "op": "access", "mappings": ["m"], "accesses": 4, "access_size": "128B"}]}})");
  CHECK_THAT(std::string(step.what()), Catch::Contains("at least 144B"));
}

TEST_CASE("a --set written with a space, or an array without brackets, says how to write it",
          "[config]") {
  // `--set fabric.switch.latency 200ns`: the value lands where the config file goes.
  CHECK_THROWS_WITH(load_pod_config(std::string("200ns"), {"fabric.switch.latency"}),
                    Catch::Contains("--set fabric.switch.latency: expected key.path=value: did "
                                    "you mean --set fabric.switch.latency=200ns? (after a space, "
                                    "200ns was taken as the config file)"));
  CHECK_THROWS_WITH(load_pod_config(std::nullopt, {"fabric.switch.latency"}),
                    Catch::Contains("expected key.path=value") && !Catch::Contains("did you mean"));
  CHECK_THROWS_WITH(
      load_pod_config(std::nullopt, {"workload.initiators=0,1"}),
      Catch::Contains("expected an array") && Catch::Contains("(an array is written in brackets: "
                                                              "workload.initiators=[0,1])"));
  CHECK(load_pod_config(std::nullopt, {"workload.initiators=[0,1]"}).workload.initiators.size() ==
        2);
}

TEST_CASE(
    "a switch input buffer or output queue smaller than the largest packet is a config error "
    "naming it",
    "[config]") {
  // A packet that fits neither waits for room that never comes: the pod deadlocks.
  for (const std::string key : {"fabric.switch.input_buffer", "fabric.switch.output_buffer"}) {
    INFO(key);
    CHECK_THROWS_WITH(read("{}", {key + "=79B"}),
                      Catch::Contains(key) && Catch::Contains("at least 80B, got 79B"));
    CHECK_THROWS_WITH(read("{}", {key + "=256B", "workload.traffic.access_size=256B"}),
                      Catch::Contains(key) && Catch::Contains("at least 272B, got 256B"));
    CHECK_NOTHROW(read("{}", {key + "=80B"}));
    CHECK_NOTHROW(read("{}", {key + "=272B", "workload.traffic.access_size=256B"}));
  }
}

TEST_CASE("a config saved with a UTF-8 byte-order mark reads as without it", "[config]") {
  CHECK(read("\xEF\xBB\xBF{\"pod\": {\"gpus\": 4}}").pod.gpus == 4);
}
