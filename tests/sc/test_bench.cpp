// podsim bench: the speed table, and the host-time and kernel figures a run reports.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <filesystem>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::slurp;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {
double num(const json::value& v) {
  return v.is_double()  ? v.as_double()
         : v.is_int64() ? static_cast<double>(v.as_int64())
                        : static_cast<double>(v.as_uint64());
}
}  // namespace

TEST_CASE("run.json says where the host time went and what the kernel did", "[bench]") {
  auto r = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=500"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.run);
  const json::object& host = r.run->at("host").as_object();
  const double total = num(r.run->at("host_seconds"));
  const double setup = num(host.at("setup_seconds")), access = num(host.at("access_seconds")),
               teardown = num(host.at("teardown_seconds"));
  CHECK(setup > 0);
  CHECK(access > 0);
  CHECK(teardown > 0);
  CHECK(setup + access + teardown <= total);
  CHECK(num(host.at("peak_rss_bytes")) > 1e6);
  CHECK(num(host.at("huge_page_bytes")) <= num(host.at("peak_rss_bytes")));
  // Every remote access is a round trip of at least 8 served items (translation, port,
  // switch, NPA MMU, VRAM, port, switch, completion), all of them in the access phase.
  const json::object& k = r.run->at("kernel").as_object();
  const double accesses = r.stat("pod.summary.remote_accesses");
  REQUIRE(accesses == 8 * 500);
  CHECK(num(k.at("access_phase_serves")) >= 8 * accesses);
  CHECK(num(k.at("access_phase_serves")) <= num(k.at("serves")));
  CHECK(num(k.at("access_phase_activations")) <= num(k.at("activations")));
}

TEST_CASE("podsim bench measures each pod size and load and writes its table", "[bench]") {
  const std::string out = (fs::path(write_temp_file("x", "")).parent_path() / "bench").string();
  auto r = run_podsim({"bench", "--gpus", "4,12", "--loads", "closed,poisson", "--accesses", "2400",
                       "--no-shipped", "--quiet", "--out", out},
                      false);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == slurp((fs::path(out) / "bench.md").string()));
  const json::value doc = json::parse(slurp((fs::path(out) / "bench.json").string()));
  const json::array& points = doc.at("points").as_array();
  REQUIRE(points.size() == 7);
  std::vector<std::string> names;
  for (const auto& p : points) {
    const json::object& o = p.as_object();
    names.emplace_back(o.at("point").as_string());
    CHECK(o.at("exit_code").as_int64() == 0);
    CHECK(num(o.at("remote_accesses")) == 2400);  // spread evenly over the initiating GPUs
    CHECK(num(o.at("remote_accesses_per_host_second")) > 0);
    CHECK(num(o.at("peak_rss_mib")) > 1);
    CHECK(num(o.at("serves_per_access")) >= 8);
  }
  CHECK(names == std::vector<std::string>{"default-4gpu-closed", "default-12gpu-closed",
                                          "default-4gpu-poisson", "default-12gpu-poisson",
                                          "all-peers-4gpu", "all-peers-12gpu",
                                          "all-peers-12gpu-8-initiators"});
  // Each point's cost is compared with the smallest pod of its kind.
  CHECK(r.out.find("| all-peers-12gpu-8-initiators | 12 | closed |") != std::string::npos);
  // A bad argument is a usage error, before anything runs.
  CHECK(run_podsim({"bench", "--loads", "bursty"}, false).exit_code == 2);
  CHECK(run_podsim({"bench", "--gpus", "8,4096"}, false).exit_code == 2);
}
