// Determinism, and the regression command itself: a golden catches a change and names it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::source_path;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void spit(const fs::path& p, const std::string& s) {
  std::ofstream(p) << s;
}
}  // namespace

TEST_CASE("the same config and seed give identical stats.json, another seed differs",
          "[regression][determinism]") {
  for (const char* config : {"configs/default.json", "configs/revoke-under-load.json"}) {
    INFO(config);
    auto a = run_podsim({"run", "--quiet", source_path(config)});
    auto b = run_podsim({"run", "--quiet", source_path(config)});
    auto c = run_podsim({"run", "--quiet", "--seed", "2", source_path(config)});
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    REQUIRE(c.exit_code == 0);
    CHECK(slurp(fs::path(a.out_dir) / "stats.json") == slurp(fs::path(b.out_dir) / "stats.json"));
    CHECK(slurp(fs::path(a.out_dir) / "config.json") == slurp(fs::path(b.out_dir) / "config.json"));
    CHECK(boost::json::serialize(a.stats->at("stats")) !=
          boost::json::serialize(c.stats->at("stats")));
    CHECK(c.stats->at("seed") == 2);
  }
}

TEST_CASE("podsim regress: blessing writes goldens, a change is caught and named", "[regression]") {
  // A private regression folder with one config and its case.
  const fs::path dir = fs::path(write_temp_file("cases.json", "")).parent_path();
  fs::create_directories(dir / "configs");
  fs::copy_file(source_path("configs/default.json"), dir / "configs" / "small.json");
  spit(dir / "cases.json", R"({"configs_dir": "configs",
    "cases": {"small": {"set": ["workload.traffic.accesses=50"]}}})");

  auto none = run_podsim({"regress", "--dir", dir.string()}, false);
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.out, Catch::Contains("small: no golden"));

  auto bless = run_podsim({"regress", "--dir", dir.string(), "--bless"}, false);
  REQUIRE(bless.exit_code == 0);
  CHECK_THAT(bless.out, Catch::Contains("small: new golden"));
  auto same = run_podsim({"regress", "--dir", dir.string()}, false);
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.out, Catch::Contains("small: matches its golden"));

  // Change the model's input behind the golden's back: the run differs, and says where.
  spit(dir / "cases.json", R"({"configs_dir": "configs",
    "cases": {"small": {"set": ["workload.traffic.accesses=50",
                                "fabric.switch.latency=151ns"]}}})");
  auto changed = run_podsim({"regress", "--dir", dir.string()}, false);
  CHECK(changed.exit_code == 1);
  CHECK_THAT(changed.out,
             Catch::Contains("small: ") && Catch::Contains("differences") &&
                 Catch::Contains("pod.summary.remote_latency.mean") &&
                 Catch::Contains("set[1]: (absent) -> \"fabric.switch.latency=151ns\""));
  // Re-blessing accepts it and prints the same differences for review.
  auto rebless = run_podsim({"regress", "--dir", dir.string(), "--bless"}, false);
  CHECK(rebless.exit_code == 0);
  CHECK_THAT(rebless.out, Catch::Contains("golden rewritten") &&
                              Catch::Contains("pod.summary.remote_latency.mean"));
  CHECK(run_podsim({"regress", "--dir", dir.string()}, false).exit_code == 0);

  // A shipped config with no case is an error that names it.
  fs::copy_file(source_path("configs/default.json"), dir / "configs" / "orphan.json");
  auto orphan = run_podsim({"regress", "--dir", dir.string()}, false);
  CHECK(orphan.exit_code == 2);
  CHECK_THAT(orphan.err, Catch::Contains("shipped configs with no regression case: orphan.json"));
}
