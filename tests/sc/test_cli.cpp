// The podsim command line, run as a user runs it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::source_path;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;

TEST_CASE("version and help", "[cli]") {
  auto v = run_podsim({"--version"}, false);
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("podsim 0."));
  auto h = run_podsim({"--help"}, false);
  CHECK(h.exit_code == 0);
  CHECK_THAT(h.out, Catch::Contains("run [CONFIG.json]"));
  auto rh = run_podsim({"run", "--help"}, false);
  CHECK(rh.exit_code == 0);
  CHECK_THAT(rh.out,
             Catch::Contains("--set") && Catch::Contains("--seed") && Catch::Contains("--out"));
  CHECK(run_podsim({}, false).exit_code == 2);
  CHECK(run_podsim({"frobnicate"}, false).exit_code == 2);
  auto bad_opt = run_podsim({"run", "--frobnicate"});
  CHECK(bad_opt.exit_code == 2);
  CHECK_FALSE(bad_opt.out_dir_exists);
  // What a command would ignore is refused instead.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--version", "extra"},
        std::vector<std::string>{"config-reference", "x.json"},
        std::vector<std::string>{"config-reference", "--bogus"}}) {
    auto r = run_podsim(args, false);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("takes no arguments, got '" + args[1] + "'"));
  }
  for (const char* o : {"--trace-sample", "--trace-max-events"}) {
    auto r = run_podsim({"run", o, "5"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(std::string(o) + " is for --trace, which is not given"));
    CHECK_FALSE(r.out_dir_exists);
  }
}

TEST_CASE("config errors: exit 2, the file and key path named, nothing written", "[cli]") {
  struct Case {
    const char* json;
    const char* path;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({"fabric": {"switch": {"latncy": "150ns"}}})", "fabric.switch.latncy",
                "unknown key"},
           Case{R"({"fabric": {"switch": {"latency": "150 furlongs"}}})", "fabric.switch.latency",
                "unknown unit"},
           Case{R"({"pod": {"gpus": "eight"}})", "pod.gpus", "integer, got a string"},
           Case{R"({"pod": {"gpus": 5000}})", "pod.gpus", "at most 1024"},
           Case{R"({"workload": {"traffic": {"access_size": "100B"}}})",
                "workload.traffic.access_size", "multiple of 64"},
       }) {
    const std::string file = write_temp_file("bad.json", c.json);
    auto r = run_podsim({"run", file});
    INFO(c.json);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(file) && Catch::Contains(c.path) && Catch::Contains(c.says));
    CHECK(r.out.empty());
    CHECK_FALSE(r.out_dir_exists);
  }
}

TEST_CASE("override (--set) errors name the --set and the key path", "[cli]") {
  auto r = run_podsim({"run", "--set", "gpu.vram.access_latency=fast"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--set gpu.vram.access_latency=fast") &&
                        Catch::Contains("gpu.vram.access_latency") &&
                        Catch::Contains("does not start with a number"));
  CHECK_FALSE(r.out_dir_exists);
  auto u = run_podsim({"run", "--set", "gpu.vram.speed=1"});
  CHECK(u.exit_code == 2);
  CHECK_THAT(u.err, Catch::Contains("gpu.vram.speed") && Catch::Contains("unknown key"));
}

TEST_CASE("a missing or malformed file is an error naming it", "[cli]") {
  auto missing = run_podsim({"run", "/nonexistent/pod.json"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err,
             Catch::Contains("/nonexistent/pod.json") && Catch::Contains("cannot open"));
  auto bad = run_podsim({"run", write_temp_file("syntax.json", "{\"pod\": {\n  \"gpus\": 8 8}}")});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("line 2"));
}

TEST_CASE("configs/default.json is the embedded default pod", "[cli]") {
  auto embedded = run_podsim({"config"}, false);
  auto file = run_podsim({"config", source_path("configs/default.json")}, false);
  REQUIRE(embedded.exit_code == 0);
  REQUIRE(file.exit_code == 0);
  CHECK(file.out == embedded.out);
  CHECK_THAT(embedded.out, Catch::Contains("\"gpus\": 8"));
}

TEST_CASE("a run writes its resolved config, seed and version, the config reproduces it", "[cli]") {
  auto first = run_podsim({"run", "--seed", "7", "--set", "workload.traffic.accesses=300"});
  REQUIRE(first.exit_code == 0);
  REQUIRE(first.config);
  REQUIRE(first.run);
  CHECK(first.config->at("seed").to_number<int>() == 7);
  CHECK(first.run->at("seed").to_number<int>() == 7);
  CHECK(first.run->at("podsim_version").as_string().size() > 0);
  CHECK(first.config->at("workload").at("traffic").at("accesses").to_number<int>() == 300);
  CHECK(first.config->at("fabric").at("switch").at("latency").as_string() == "150ns");

  const std::string resolved =
      write_temp_file("resolved.json", boost::json::serialize(*first.config));
  auto again = run_podsim({"run", resolved});
  REQUIRE(again.exit_code == 0);
  CHECK(boost::json::serialize(again.stats->at("stats")) ==
        boost::json::serialize(first.stats->at("stats")));
}

TEST_CASE("the default run prints a remote-access count and its latency breakdown", "[cli]") {
  auto r = run_podsim({"run"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("remote accesses") && Catch::Contains("latency (ns)") &&
                        Catch::Contains("per-hop breakdown") && Catch::Contains("switch"));
  CHECK(r.stat("pod.summary.remote_accesses") > 0);
  CHECK(r.err.empty());
}

namespace {
// Runs podsim under a pseudo-terminal (util-linux `script`), so stderr is a terminal; returns
// what the terminal showed.
std::string run_on_terminal(const std::string& args) {
  const std::string log = write_temp_file("tty.log", "");
  const std::string cmd = "PODSIM_PROGRESS_AFTER_MS=0 script -qec \"'" + std::string(PODSIM_EXE) +
                          "' " + args + " >/dev/null\" /dev/null >'" + log + "' 2>&1 </dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("a progress line on a terminal only, never with --quiet, and it changes nothing",
          "[cli]") {
  const std::string dir = fs::path(write_temp_file("x", "")).parent_path().string();
  const std::string tty =
      run_on_terminal("run " + source_path("configs/node-reset.json") + " --out '" + dir + "/tty'");
  CHECK_THAT(tty, Catch::Contains("podsim: simulated") && Catch::Contains("of at most 1 s") &&
                      Catch::Contains("accesses"));
  CHECK_THAT(tty, Catch::Contains("\r\033[K"));  // rewritten in place, then cleared
  const std::string quiet = run_on_terminal(
      "run --quiet " + source_path("configs/node-reset.json") + " --out '" + dir + "/quiet'");
  CHECK_THAT(quiet, !Catch::Contains("podsim: simulated"));
  auto piped = run_podsim({"run", source_path("configs/node-reset.json")});
  REQUIRE(piped.exit_code == 0);
  CHECK_THAT(piped.err, !Catch::Contains("podsim: simulated"));
  // The run reported on is the same run.
  CHECK(podsim::test::slurp((fs::path(dir) / "tty" / "stats.json").string()) ==
        podsim::test::slurp((fs::path(piped.out_dir) / "stats.json").string()));
}

TEST_CASE(
    "a directory or an endless file as the config, and numbers on the command line that are "
    "not whole numbers in range, are errors with exit 2",
    "[cli]") {
  const std::string dir = std::filesystem::path(write_temp_file("x", "")).parent_path().string();
  auto d = run_podsim({"run", dir});
  CHECK(d.exit_code == 2);
  CHECK_THAT(d.err, Catch::Contains(dir + ": is a directory"));
  auto endless = run_podsim({"run", "/dev/zero"});
  CHECK(endless.exit_code == 2);
  CHECK_THAT(endless.err, Catch::Contains("/dev/zero: larger than 16 MiB"));
  CHECK_FALSE(endless.out_dir_exists);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--seed", "-5"},
        std::vector<std::string>{"run", "--trace-max-events", "-1"},
        std::vector<std::string>{"run", "--trace-sample", "0"},
        std::vector<std::string>{"run", "--seed", "1e3"},
        std::vector<std::string>{"run", "--seed", "+5"},
        std::vector<std::string>{"sweep", "--vary", "pod.gpus=2,4", "-j", "0"}}) {
    INFO(args[1] << " " << args.back());
    auto r = run_podsim(args, false);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("is not a whole number of at least"));
  }
  // A whole number past 2^64 - 1 is too large, not "not a whole number".
  for (const char* n : {"18446744073709551616", "99999999999999999999999"}) {
    auto r = run_podsim({"run", "--seed", n}, false);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(std::string("the argument '") + n +
                                      "' for option '--seed' is too large (at most "
                                      "18446744073709551615)"));
  }
  // The largest seed, as --seed and as --set seed: the same run.
  auto flag = run_podsim(
      {"run", "--quiet", "--seed", "18446744073709551615", "--set", "workload.traffic.accesses=5"});
  auto set = run_podsim({"run", "--quiet", "--set", "seed=18446744073709551615", "--set",
                         "workload.traffic.accesses=5"});
  REQUIRE(flag.exit_code == 0);
  REQUIRE(set.exit_code == 0);
  CHECK(flag.stats->at("seed") == set.stats->at("seed"));
  CHECK(podsim::test::slurp(flag.out_dir + "/stats.json") ==
        podsim::test::slurp(set.out_dir + "/stats.json"));
}
