// Determinism, and the regression command itself: a golden catches a change and names it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::slurp;
using podsim::test::source_path;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;

namespace {
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

TEST_CASE("study pages show what their commands print", "[regression][studies]") {
  int studies = 0;
  for (const auto& entry : fs::directory_iterator(source_path("docs"))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("study-", 0) != 0 || entry.path().extension() != ".md") continue;
    ++studies;
    INFO(name);
    const std::string doc = slurp(entry.path());
    // The command: the fenced block after the marker, as a user types it.
    const auto marker = doc.find("<!-- study-command -->");
    REQUIRE(marker != std::string::npos);
    const auto open = doc.find("```\n", marker);
    const auto close = doc.find("\n```", open + 4);
    REQUIRE(close != std::string::npos);
    std::istringstream words(doc.substr(open + 4, close - open - 4));
    std::vector<std::string> args;
    for (std::string w; words >> w;)
      args.push_back(w);
    REQUIRE(args.size() > 2);
    REQUIRE(args[0] == "build/release/podsim");
    args.erase(args.begin());
    for (auto& a : args)
      if (a.rfind("configs/", 0) == 0) a = source_path(a);
    const std::string out = (fs::path(write_temp_file("x", "")).parent_path() / "sweep").string();
    args.insert(args.end(), {"--out", out});
    auto r = run_podsim(args, false);
    INFO(r.err);
    // A page whose sweep has a failing point on purpose says so: "<!-- study-exit: 1 -->".
    const auto declared = doc.find("<!-- study-exit: ");
    const int exit_code =
        declared == std::string::npos ? 0 : std::stoi(doc.substr(declared + 17, 3));
    REQUIRE(r.exit_code == exit_code);
    // The table it wrote (sweep.md, which it also printed) is what the page shows.
    const std::string printed = slurp(fs::path(out) / "sweep.md");
    CHECK(r.out.rfind(printed, 0) == 0);
    const std::string begin = "<!-- study-results: begin -->\n";
    const auto b = doc.find(begin);
    const auto e = doc.find("<!-- study-results: end -->");
    REQUIRE(b != std::string::npos);
    REQUIRE(e != std::string::npos);
    CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == printed);
    CHECK(printed.rfind("| ", 0) == 0);
  }
  CHECK(studies == 5);
}

TEST_CASE("podsim regress: a golden it cannot read fails its case only, naming the file",
          "[regression]") {
  const fs::path dir = fs::path(write_temp_file("cases.json", "")).parent_path();
  fs::create_directories(dir / "configs");
  fs::copy_file(source_path("configs/default.json"), dir / "configs" / "one.json");
  fs::copy_file(source_path("configs/default.json"), dir / "configs" / "two.json");
  spit(dir / "cases.json", R"({"configs_dir": "configs", "cases": {
    "one": {"set": ["workload.traffic.accesses=20"]},
    "two": {"set": ["workload.traffic.accesses=20"]}}})");
  REQUIRE(run_podsim({"regress", "--dir", dir.string(), "--bless"}, false).exit_code == 0);
  const fs::path one = dir / "golden" / "one.json";
  for (const char* broken : {"{\"digest\": ", "{\"stats\": {}}"}) {
    INFO(broken);
    spit(one, broken);
    auto r = run_podsim({"regress", "--dir", dir.string()}, false);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("one: " + one.string()));
    CHECK_THAT(r.out, Catch::Contains("two: matches its golden"));
    CHECK_THAT(r.err, !Catch::Contains("internal error"));
  }
  // Blessing replaces it.
  REQUIRE(run_podsim({"regress", "--dir", dir.string(), "--bless"}, false).exit_code == 0);
  CHECK(run_podsim({"regress", "--dir", dir.string()}, false).exit_code == 0);
  // A case named twice in cases.json would be run once, silently: an error.
  spit(dir / "cases.json", R"({"configs_dir": "configs", "cases": {
    "one": {"set": []}, "two": {"set": []}, "one": {"set": []}}})");
  auto twice = run_podsim({"regress", "--dir", dir.string()}, false);
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err, Catch::Contains("cases.json: cases.one: the key appears twice"));
}
