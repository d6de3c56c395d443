// The report's readers (sim/tools/report.cpp: its JSON and CSV readers, run and sweep pages),
// through report_command. The first byte of the input picks one file of a run directory,
// the rest is its content:
//   (byte & 0x7f) % 7: 0 stats.json, 1 run.json, 2 latency.csv, 3 latency_histogram.csv,
//                      4 timeseries.csv, 5 breakdown.csv, 6 sweep.json (a sweep's page)
//   byte & 0x80: the file is removed instead (the content is ignored)
// The directory is a per-process copy of a valid run's outputs (fuzz/seed-run, or the
// directory PODSIM_FUZZ_SEED_RUN names), restored after each input. report_command must
// return 0 (written) or 2 (damaged input, said on stderr); any exception escaping it, any
// other exit code, a crash, a sanitizer report or a hang is a finding.
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "fuzz/fuzz_escape.hpp"
#include "sim/tools/report.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::array<const char*, 7> kFiles = {
    "stats.json",     "run.json",      "latency.csv", "latency_histogram.csv",
    "timeseries.csv", "breakdown.csv", "sweep.json"};

struct State {
  fs::path dir;
  std::map<std::string, std::optional<std::string>> seed;  // each file's content, if any
};
State* state = nullptr;

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const fs::path& p, const std::optional<std::string>& content) {
  if (!content) {
    fs::remove(p);
    return;
  }
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << *content;
  if (!out.flush()) podsim::fuzz::finding("cannot write into the fuzz directory");
}

void remove_dir() {
  if (state) fs::remove_all(state->dir);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("PODSIM_FUZZ_SEED_RUN");
  const fs::path seed_dir = env ? env : PODSIM_FUZZ_SEED_RUN;
  if (!fs::is_regular_file(seed_dir / "stats.json")) {
    std::fprintf(stderr, "fuzz_report: %s holds no stats.json (set PODSIM_FUZZ_SEED_RUN)\n",
                 seed_dir.c_str());
    std::exit(1);
  }
  std::string tmpl = (fs::temp_directory_path() / "podsim-fuzz-report-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) podsim::fuzz::finding("mkdtemp failed");
  state = new State{fs::path(tmpl), {}};
  std::atexit(remove_dir);
  for (const char* f : kFiles) {
    state->seed[f] = std::string(f) == "sweep.json" ? std::nullopt : read_file(seed_dir / f);
    put(state->dir / f, state->seed[f]);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char* name = kFiles[(data[0] & 0x7f) % kFiles.size()];
  const bool remove = (data[0] & 0x80) != 0;
  const fs::path file = state->dir / name;
  if (remove)
    put(file, std::nullopt);
  else
    put(file, std::string(reinterpret_cast<const char*>(data) + 1, size - 1));

  podsim::tools::ReportOptions opt;
  opt.dir = state->dir.string();
  opt.out = (state->dir / "report.html").string();
  std::ostringstream out, err;
  int rc = -1;
  try {
    rc = podsim::tools::report_command(opt, out, err);
  } catch (const std::exception& e) {
    podsim::fuzz::escaped(e);
  }
  if (rc != 0 && rc != 2) {
    std::fprintf(stderr, "fuzz_report: exit %d\n%s", rc, err.str().c_str());
    std::abort();
  }
  if (rc == 2 && err.str().empty()) podsim::fuzz::finding("exit 2 with nothing said on stderr");

  put(file, state->seed[name]);
  return 0;
}
