#include "tests/support/run_podsim.hpp"

#include "sim/tools/csv.hpp"

#include <unistd.h>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace podsim::test {
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The folders this test process made, removed when it exits (each test case runs in a process
// of its own, so a case's files live as long as it does). PODSIM_TEST_KEEP=1 keeps them, to
// look at; a process that crashes leaves its own behind.
class ScratchDirs {
 public:
  ScratchDirs(const ScratchDirs&) = delete;
  ScratchDirs& operator=(const ScratchDirs&) = delete;
  static ScratchDirs& instance() {
    static ScratchDirs dirs;
    return dirs;
  }
  fs::path make() {
    fs::path base = fs::temp_directory_path() / ("podsim-test-" + std::to_string(::getpid()) + "-" +
                                                 std::to_string(made_.size()));
    fs::remove_all(base);
    fs::create_directories(base);
    made_.push_back(base);
    return base;
  }
  ~ScratchDirs() {
    const char* keep = std::getenv("PODSIM_TEST_KEEP");
    if (keep && std::string(keep) == "1") return;
    std::error_code ignored;  // a test may already have removed or replaced one
    for (const auto& d : made_)
      fs::remove_all(d, ignored);
  }

 private:
  ScratchDirs() = default;
  std::vector<fs::path> made_;
};

fs::path fresh_dir() {
  return ScratchDirs::instance().make();
}

std::optional<boost::json::value> read_json(const fs::path& p) {
  if (!fs::exists(p)) return std::nullopt;
  return boost::json::parse(slurp(p));
}

}  // namespace

double PodsimRun::stat(const std::string& path, const std::string& field) const {
  if (!stats) throw std::runtime_error("no stats.json");
  const auto* s = stats->at("stats").as_object().if_contains(path);
  if (!s) throw std::runtime_error("stats.json has no stat " + path);
  return s->at(field).to_number<double>();
}

namespace {
PodsimRun run_command(const std::string& launcher, const std::vector<std::string>& args,
                      bool add_out) {
  fs::path work = fresh_dir();
  PodsimRun r;
  r.out_dir = (work / "out").string();
  std::string cmd = launcher + quote(PODSIM_EXE);
  for (const auto& a : args)
    cmd += " " + quote(a);
  if (add_out) cmd += " --out " + quote(r.out_dir);
  cmd += " </dev/null >" + quote((work / "stdout").string()) + " 2>" +
         quote((work / "stderr").string());
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(work / "stdout");
  r.err = slurp(work / "stderr");
  r.out_dir_exists = fs::exists(r.out_dir);
  r.stats = read_json(fs::path(r.out_dir) / "stats.json");
  r.config = read_json(fs::path(r.out_dir) / "config.json");
  r.run = read_json(fs::path(r.out_dir) / "run.json");
  return r;
}
}  // namespace

PodsimRun run_podsim(const std::vector<std::string>& args, bool add_out) {
  return run_command("", args, add_out);
}

PodsimRun run_podsim_limited(unsigned long kib, const std::vector<std::string>& args,
                             bool add_out) {
  return run_command("ulimit -v " + std::to_string(kib) + "; ", args, add_out);
}

PodsimRun run_podsim_after(const std::string& shell_prefix, const std::vector<std::string>& args,
                           bool add_out) {
  return run_command(shell_prefix, args, add_out);
}

namespace {
// mpirun's own words before the ranks' command, as the tests run it (as root, as CI does);
// `limit` (e.g. "timeout 300 ") goes just before mpirun.
std::string mpi_launcher(const std::string& limit = "") {
#if defined(__SANITIZE_ADDRESS__)
  // Open MPI's own allocations outlive MPI_Finalize, in plugins it has unloaded by the time
  // LeakSanitizer looks (so no suppression can name them): leak checks are off for these ranks
  // and their children. The same runs are leak-checked without mpirun by the other tests.
  const std::string sanitizer = "LSAN_OPTIONS=detect_leaks=0 ";
#else
  const std::string sanitizer;
#endif
  return sanitizer + "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + limit +
         quote(PODSIM_MPIEXEC) + " --oversubscribe ";
}
}  // namespace

PodsimRun run_podsim_mpi(int ranks, const std::vector<std::string>& args, bool add_out) {
  return run_command(mpi_launcher() + "-n " + std::to_string(ranks) + " ", args, add_out);
}

PodsimRun run_podsim_mpi_apart(const std::vector<std::string>& rank0,
                               const std::vector<std::string>& rank1,
                               const std::string& rank1_env) {
  // Ranks that do not agree could wait for each other: a hang fails the test (exit 124)
  // rather than stalling the suite.
  std::string first = mpi_launcher("timeout 300 ") + "-n 1 " + quote(PODSIM_EXE);
  for (const auto& a : rank0)
    first += " " + quote(a);
  return run_command(first + " : -n 1 " + (rank1_env.empty() ? "" : "env " + rank1_env + " "),
                     rank1, false);
}

std::string slurp(const std::string& path) {
  return slurp(fs::path(path));
}

std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  return tools::parse_csv(slurp(fs::path(path)));
}

std::string source_path(const std::string& relative) {
  return (fs::path(PODSIM_SOURCE_DIR) / relative).string();
}

std::string write_temp_file(const std::string& name, const std::string& text) {
  fs::path p = fresh_dir() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

}  // namespace podsim::test
