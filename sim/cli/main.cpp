// podsim: the command line.
//
//   podsim run [CONFIG.json] [--set key.path=value ...] [--out DIR] [--seed N] [--quiet]
//   podsim config [CONFIG.json] [--set ...]   print the resolved config
//   podsim config-reference                   every config key, as a Markdown table
//   podsim --help | --version
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/crash_guard.hpp"
#include "sim/core/huge_pages.hpp"
#include "sim/core/json_write.hpp"
#include "sim/core/units.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "sim/pod/run.hpp"
#include "sim/tools/bench.hpp"
#include "sim/tools/campaign.hpp"
#include "sim/tools/mpi_ranks.hpp"
#include "sim/tools/mpi_world.hpp"
#include "sim/tools/regress.hpp"
#include "sim/tools/report.hpp"
#include "sim/tools/sweep.hpp"

namespace po = boost::program_options;

namespace {

// A whole number on the command line, read strictly: digits only (program_options' own
// reading takes "-5" as 18446744073709551611), with a least value; the option names itself in
// the error.
struct Count {
  std::uint64_t value = 0;
};
std::ostream& operator<<(std::ostream& o, const Count& c) {
  return o << c.value;
}
template <std::uint64_t Min>
struct AtLeast : Count {};
template <std::uint64_t Min>
std::ostream& operator<<(std::ostream& o, const AtLeast<Min>& c) {
  return o << c.value;
}

template <class T, std::uint64_t Min>
void validate_count(boost::any& v, const std::vector<std::string>& values) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  // Any 64-bit whole number (from_chars refuses signs, blanks, fractions and overflow).
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  const bool ok = !s.empty() && s.front() != '+' && ec == std::errc() && end == s.data() + s.size();
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
    throw po::error_with_option_name(
        fmt::format("the argument '{}' for option '%canonical_option%' is too large (at most {})",
                    s, std::numeric_limits<std::uint64_t>::max()));
  if (!ok || n < Min)
    throw po::error_with_option_name(fmt::format(
        "the argument '{}' for option '%canonical_option%' is not a whole number of at least {}", s,
        Min));
  T t;
  t.value = n;
  v = t;
}

// program_options finds these by argument-dependent lookup (beside the types).
void validate(boost::any& v, const std::vector<std::string>& values, Count*, int) {
  validate_count<Count, 0>(v, values);
}
template <std::uint64_t Min>
void validate(boost::any& v, const std::vector<std::string>& values, AtLeast<Min>*, int) {
  validate_count<AtLeast<Min>, Min>(v, values);
}

constexpr const char* kUsage =
    "usage: podsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [CONFIG.json]     run a pod (without CONFIG: the embedded default pod, 8 GPUs on one\n"
    "                        UALoE switch, every GPU loading and storing into the others' "
    "buffers)\n"
    "  config [CONFIG.json]  print the resolved config (every default filled in) and exit\n"
    "  config-reference      print every config key with its type, default and meaning\n"
    "  sweep CONFIG --vary key=v1,v2,...\n"
    "                        run a grid of points (parallel processes), one CSV/JSON row each\n"
    "  report DIR            one HTML file with the plots of a run's or a sweep's output\n"
    "  report RUN_A RUN_B    two runs side by side (config difference, numbers, plots)\n"
    "  regress               run the shipped configs briefly, compare with golden results\n"
    "  bench                 how fast podsim simulates: 8 to 1,024 GPUs, closed-loop and Poisson\n"
    "  campaign              a randomized fault campaign: generated scenarios, each judged\n"
    "\n"
    "options:\n"
    "  -h, --help            this help (also: podsim <command> --help)\n"
    "  --version             print the version\n";

struct Parsed {
  po::variables_map vm;
  bool help = false;
};

int parse(const std::string& cmd, const std::vector<std::string>& args,
          po::options_description& desc, bool takes_config, po::variables_map& vm) {
  po::positional_options_description pos;
  po::options_description all;
  all.add(desc);
  if (takes_config) {
    po::options_description hidden;
    hidden.add_options()("config", po::value<std::string>(), "config file");
    all.add(hidden);
    pos.add("config", 1);
  }
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    fmt::print(std::cerr, "podsim {}: {}\nTry 'podsim {} --help'.\n", cmd, e.what(), cmd);
    return 2;
  }
  return 0;
}

// Under mpirun every rank must start the same command: a rank that ends before its first
// exchange with the others (its command line refused, --help, another command: an MPMD launch
// gives each rank its own command line) would leave them waiting there for ever. So every rank
// takes part in this agreement exactly once: one starting `podsim run` or `podsim sweep` just
// before it starts, any other as it ends (sc_main). Unless all started the same, none goes on;
// rank 0 says what each rank did, with what the others printed (they are silenced).
// (A rank that started nothing says whether its command line ended it well or was refused:
// ranks refused where others were not have their messages printed too.)
enum class Started : int { nothing = 0, run = 1, sweep = 2, refused = 3 };
bool g_agreed = false;

bool agree_to_start(Started mine) {
  using podsim::tools::MpiWorld;
  g_agreed = true;
  if (!MpiWorld::launched()) return true;
  const std::vector<int> all = MpiWorld::gather_all(static_cast<int>(mine));
  if (std::all_of(all.begin(), all.end(), [&](int c) { return c == all[0]; })) return true;
  constexpr int kWhyTag = 9;
  const int me = MpiWorld::rank();
  if (me != 0 && all[me] != all[0]) MpiWorld::send(0, kWhyTag, MpiWorld::silenced());
  if (me == 0) {
    auto what = [](int c) {
      switch (static_cast<Started>(c)) {
        case Started::run: return "started `podsim run`";
        case Started::sweep: return "started `podsim sweep`";
        case Started::refused: return "started nothing (its command line was refused)";
        case Started::nothing: break;
      }
      return "started nothing (its command line ended it)";
    };
    fmt::print(std::cerr,
               "podsim: the ranks did not all start the same command (every rank must run the "
               "same command with the same files); rank 0 {}, and:\n",
               what(all[0]));
    for (int r = 1; r < MpiWorld::size(); ++r) {
      if (all[r] == all[0]) continue;
      const std::string said = MpiWorld::receive(r, kWhyTag);
      fmt::print(std::cerr, "  rank {} {}{}\n", r, what(all[r]),
                 said.empty() ? "" : ", saying: " + said);
    }
  }
  return false;
}

int cmd_run(const std::string& cmd, const std::vector<std::string>& args, bool print_only) {
  po::options_description desc(fmt::format("podsim {} [CONFIG.json] [options]", cmd));
  desc.add_options()("help,h", "this help")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one config value: --set key.path=value (repeatable); values are JSON, or "
      "strings such as 200ns")("seed", po::value<Count>(), "seed (overrides the config's)");
  if (!print_only)
    desc.add_options()("out,o", po::value<std::string>()->default_value("podsim-out"),
                       "directory for stats.json, config.json and run.json")(
        "quiet,q", "no summary on stdout")(
        "warnings-as-errors",
        "exit 3 if the run has warnings (offered load not reached, a dominant hop, a window "
        "too short or not steady, accesses not served or retried: run.json \"warnings\")")(
        "access-log", po::value<std::string>(),
        "write every access issued to this file, in the trace format (replayable)")(
        "trace", po::value<std::string>(),
        "write a timeline to this file (Chrome/Perfetto trace-event JSON): driver calls, "
        "messages and scenario steps, and sampled accesses hop by hop")(
        "trace-sample", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{100}}),
        "with --trace: one access in this many per GPU")(
        "trace-max-events", po::value<Count>()->default_value(Count{200000}),
        "with --trace: at most this many events for sampled accesses (bounds the file)")(
        "state-digest", po::value<std::string>(),
        "write digests of every GPU's state (driver tables, page tables, VRAM allocator, "
        "mailbox rings), taken as the first access phase starts, to this file: equal digests, "
        "equal state (e.g. workload.setup protocol against direct)");
  po::variables_map vm;
  if (int rc = parse(cmd, args, desc, true, vm)) return rc;
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  podsim::RunOptions opt;
  if (vm.count("config")) opt.config_path = vm["config"].as<std::string>();
  if (vm.count("set")) opt.overrides = vm["set"].as<std::vector<std::string>>();
  if (vm.count("seed")) opt.seed = vm["seed"].as<Count>().value;
  if (print_only) {
    try {
      podsim::PodConfig cfg = podsim::load_pod_config(opt.config_path, opt.overrides);
      if (opt.seed) cfg.seed = *opt.seed;
      std::cout << podsim::config::to_pretty_json(podsim::write_pod_config(cfg));
      return 0;
    } catch (const podsim::config::ConfigError& e) {
      fmt::print(std::cerr, "podsim: config error: {}\n", e.what());
      return 2;
    }
  }
  opt.out_dir = vm["out"].as<std::string>();
  opt.quiet = vm.count("quiet") > 0;
  opt.warnings_as_errors = vm.count("warnings-as-errors") > 0;
  if (vm.count("access-log")) opt.access_log = vm["access-log"].as<std::string>();
  if (vm.count("trace")) opt.timeline = vm["trace"].as<std::string>();
  if (vm.count("state-digest")) opt.state_digest = vm["state-digest"].as<std::string>();
  for (const char* o : {"trace-sample", "trace-max-events"})
    if (!vm[o].defaulted() && !opt.timeline) {
      fmt::print(std::cerr, "podsim run: --{} is for --trace, which is not given\n", o);
      return 2;
    }
  opt.timeline_sample = vm["trace-sample"].as<AtLeast<1>>().value;
  opt.timeline_max_access_events = vm["trace-max-events"].as<Count>().value;
  if (opt.timeline_sample == 0) {
    std::cerr << "podsim run: --trace-sample must be at least 1\n";
    return 2;
  }
  if (!agree_to_start(Started::run)) return 2;
  // Under mpirun, the pod is split across the ranks.
  std::unique_ptr<podsim::RankComm> ranks;
  if (podsim::tools::MpiWorld::launched()) {
    ranks = podsim::tools::mpi_ranks();
    opt.ranks = ranks.get();
  }
  return podsim::run_command(opt, std::cout, std::cerr);
}

int cmd_sweep(const std::vector<std::string>& args) {
  po::options_description desc("podsim sweep [CONFIG.json] --vary key.path=v1,v2,... [options]");
  desc.add_options()("help,h", "this help")(
      "vary", po::value<std::vector<std::string>>()->composing(),
      "a key and its values: key.path=v1,v2,... (repeatable: the grid of all combinations, the "
      "first --vary outermost)")("set", po::value<std::vector<std::string>>()->composing(),
                                 "override one config value at every point (repeatable)")(
      "seed", po::value<Count>(), "seed for every point")(
      "stat", po::value<std::vector<std::string>>()->composing(),
      "one more column: a stats.json key, optionally :field (default value), e.g. "
      "pod.gpu0.vram.channel_balance or pod.summary.send_time:p99")(
      "table", po::value<std::vector<std::string>>()->composing(),
      "a column of the Markdown table (sweep.md, printed): repeatable; default the mean and p99 "
      "remote latency, the achieved bandwidth and the --stat columns")(
      "jobs,j", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{1}}), "points run at once")(
      "out,o", po::value<std::string>()->default_value("podsim-sweep"),
      "directory for sweep.csv, sweep.json and points/")("quiet,q", "no progress or summary")(
      "warnings-as-errors",
      "run every point with --warnings-as-errors: a point with warnings exits 3 and counts as "
      "failed");
  po::variables_map vm;
  if (int rc = parse("sweep", args, desc, true, vm)) return rc;
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  podsim::tools::SweepOptions opt;
  if (vm.count("config")) opt.config_path = vm["config"].as<std::string>();
  try {
    if (vm.count("vary"))
      for (const auto& v : vm["vary"].as<std::vector<std::string>>())
        opt.vary.push_back(podsim::tools::parse_vary(v));
  } catch (const std::invalid_argument& e) {
    fmt::print(std::cerr, "podsim sweep: {}\n", e.what());
    return 2;
  }
  if (vm.count("set")) opt.overrides = vm["set"].as<std::vector<std::string>>();
  if (vm.count("stat")) opt.extra_stats = vm["stat"].as<std::vector<std::string>>();
  if (vm.count("table")) opt.table_columns = vm["table"].as<std::vector<std::string>>();
  if (vm.count("seed")) opt.seed = vm["seed"].as<Count>().value;
  opt.jobs =
      static_cast<unsigned>(std::min<std::uint64_t>(vm["jobs"].as<AtLeast<1>>().value, 4096));
  opt.out_dir = vm["out"].as<std::string>();
  opt.quiet = vm.count("quiet") > 0;
  opt.warnings_as_errors = vm.count("warnings-as-errors") > 0;
  if (podsim::tools::MpiWorld::rank() != 0) opt.quiet = true;  // rank 0 reports progress
  if (!agree_to_start(Started::sweep)) return 2;
  return podsim::tools::sweep_command(opt, std::cout, std::cerr);
}

int cmd_report(const std::vector<std::string>& args) {
  po::options_description desc(
      "podsim report RUN_OR_SWEEP_DIR [options]\n"
      "podsim report RUN_DIR OTHER_RUN_DIR [options]   (two runs side by side)");
  desc.add_options()("help,h", "this help")(
      "out,o", po::value<std::string>(),
      "the HTML file to write (default: DIR/report.html; for two runs ./podsim-compare.html)");
  po::options_description all;
  all.add(desc);
  all.add_options()("dirs", po::value<std::vector<std::string>>(), "directories");
  po::positional_options_description pos;
  pos.add("dirs", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    fmt::print(std::cerr, "podsim report: {}\nTry 'podsim report --help'.\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  const auto dirs =
      vm.count("dirs") ? vm["dirs"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (dirs.empty()) {
    std::cerr << "podsim report: which directory? (a run's --out or a sweep's --out)\n";
    return 2;
  }
  if (dirs.size() > 2) {
    std::cerr << "podsim report: one directory (a run or a sweep), or two runs to compare; got "
              << dirs.size() << "\n";
    return 2;
  }
  podsim::tools::ReportOptions opt;
  opt.dir = dirs[0];
  if (dirs.size() == 2) opt.against = dirs[1];
  if (vm.count("out")) opt.out = vm["out"].as<std::string>();
  return podsim::tools::report_command(opt, std::cout, std::cerr);
}

int cmd_regress(const std::vector<std::string>& args) {
  po::options_description desc("podsim regress [options]");
  desc.add_options()("help,h", "this help")(
      "dir", po::value<std::string>()->default_value("tests/regression"),
      "the folder with cases.json and golden/")(
      "case", po::value<std::vector<std::string>>()->composing(),
      "run only this case (repeatable; a case is a shipped config's name)")(
      "bless", "rewrite the goldens from these runs and print what changed")(
      "jobs,j", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{1}}), "cases run at once");
  po::variables_map vm;
  if (int rc = parse("regress", args, desc, false, vm)) return rc;
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  podsim::tools::RegressOptions opt;
  opt.dir = vm["dir"].as<std::string>();
  if (vm.count("case")) opt.cases = vm["case"].as<std::vector<std::string>>();
  opt.bless = vm.count("bless") > 0;
  opt.jobs =
      static_cast<unsigned>(std::min<std::uint64_t>(vm["jobs"].as<AtLeast<1>>().value, 4096));
  return podsim::tools::regress_command(opt, std::cout, std::cerr);
}

int cmd_bench(const std::vector<std::string>& args) {
  po::options_description desc(
      "podsim bench [options]   (run it from the source tree: it reads configs/)");
  desc.add_options()("help,h", "this help")(
      "gpus", po::value<std::string>()->default_value("8,72,1024"),
      "pod sizes (comma-separated); the default pod on one switch, 7 peers per GPU")(
      "loads", po::value<std::string>()->default_value("closed,poisson"),
      "closed (closed loop, 32 outstanding per GPU) and/or poisson (50% offered load)")(
      "accesses", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{800000}}),
      "remote accesses per point, spread over the GPUs")(
      "rounds", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{3}}),
      "runs of each point, 1 to 100, taking turns (every point once per round); host times "
      "are the medians, and every round must give the same results")(
      "configs", po::value<std::string>()->default_value("configs"),
      "the folder holding helios-72.json and pod-1024.json (also measured)")(
      "no-shipped", "leave out helios-72.json and pod-1024.json")(
      "no-all-peers",
      "leave out the default all_to_all with every GPU importing from all others (sizes up "
      "to 128, closed loop; and 8 initiators at the largest)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one config value at every point (repeatable)")(
      "out,o", po::value<std::string>()->default_value("podsim-bench"),
      "directory for bench.md, bench.json and points/ (points/NAME/ROUND/ with more than one "
      "round)")("quiet,q", "no progress on stderr");
  po::variables_map vm;
  if (int rc = parse("bench", args, desc, false, vm)) return rc;
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  podsim::tools::BenchOptions opt;
  // A comma-separated list: every item given (bench_command refuses an empty list).
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    if (s.empty()) return out;
    std::string cur;
    for (char c : s + ",") {
      if (c != ',') {
        cur += c;
      } else {
        out.push_back(cur);
        cur.clear();
      }
    }
    return out;
  };
  opt.gpus.clear();
  for (const auto& g : split(vm["gpus"].as<std::string>())) {
    try {
      std::size_t used = 0;
      const unsigned long n = std::stoul(g, &used);
      if (used != g.size() || n < 2 || n > 1024) throw std::invalid_argument(g);
      opt.gpus.push_back(static_cast<std::uint32_t>(n));
    } catch (const std::exception&) {
      fmt::print(std::cerr,
                 "podsim bench: --gpus {}: {} is not a pod size (expected sizes from 2 to 1024, "
                 "comma-separated)\n",
                 vm["gpus"].as<std::string>(), g.empty() ? "an empty item" : "'" + g + "'");
      return 2;
    }
  }
  opt.loads = split(vm["loads"].as<std::string>());
  opt.accesses = vm["accesses"].as<AtLeast<1>>().value;
  opt.rounds = vm["rounds"].as<AtLeast<1>>().value;  // bench_command checks its range
  opt.configs_dir = vm["configs"].as<std::string>();
  opt.configs_given = !vm["configs"].defaulted();
  opt.shipped = vm.count("no-shipped") == 0;
  opt.all_peers = vm.count("no-all-peers") == 0;
  if (vm.count("set")) opt.overrides = vm["set"].as<std::vector<std::string>>();
  opt.out_dir = vm["out"].as<std::string>();
  opt.quiet = vm.count("quiet") > 0;
  return podsim::tools::bench_command(opt, std::cout, std::cerr);
}

int cmd_campaign(const std::vector<std::string>& args) {
  po::options_description desc("podsim campaign [options]");
  desc.add_options()("help,h", "this help")(
      "seeds", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{100}}), "how many seeds")(
      "first", po::value<Count>()->default_value(Count{1}), "the first seed")(
      "jobs,j", po::value<AtLeast<1>>()->default_value(AtLeast<1>{{1}}), "runs at once")(
      "out,o", po::value<std::string>()->default_value("podsim-campaign"),
      "directory for each run (kept for findings, or all with --keep)")(
      "keep", "keep every run's directory")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one config value in every run (repeatable): a what-if, a bug put back")(
      "print", po::value<Count>(), "print the scenario this seed makes, and exit")(
      "quiet,q", "no progress on stderr");
  po::variables_map vm;
  if (int rc = parse("campaign", args, desc, false, vm)) return rc;
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (vm.count("print")) {
    std::cout << podsim::tools::campaign_scenario(vm["print"].as<Count>().value);
    return 0;
  }
  podsim::tools::CampaignOptions opt;
  opt.seeds = vm["seeds"].as<AtLeast<1>>().value;
  opt.first_seed = vm["first"].as<Count>().value;
  opt.jobs =
      static_cast<unsigned>(std::min<std::uint64_t>(vm["jobs"].as<AtLeast<1>>().value, 4096));
  opt.out_dir = vm["out"].as<std::string>();
  opt.keep = vm.count("keep") > 0;
  opt.quiet = vm.count("quiet") > 0;
  if (vm.count("set")) opt.overrides = vm["set"].as<std::vector<std::string>>();
  return podsim::tools::campaign_command(opt, std::cout, std::cerr);
}

}  // namespace

// SystemC prints a banner when its kernel starts, before sc_main runs: ask it not to.
const bool kNoBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0) == 0;

// SystemC's main() calls this (declared extern "C" by SystemC).
extern "C" int sc_main(int argc, char* argv[]);

namespace {
std::streambuf* g_terminal_err = nullptr;  // stderr as it was, for a rank's internal error

int dispatch(int argc, char* argv[]) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
    // Commands that take no arguments: anything after them is a mistake, not to be ignored.
    if ((cmd == "--version" || cmd == "config-reference") && !rest.empty()) {
      fmt::print(std::cerr, "podsim {}: takes no arguments, got '{}'\n", cmd, rest.front());
      return 2;
    }
    if (cmd == "--version") {
      std::cout << "podsim " << podsim::podsim_version() << "\n";
      return 0;
    }
    using podsim::tools::MpiWorld;
    static const std::vector<std::string> commands{
        "run", "config", "regress", "sweep", "report", "bench", "campaign", "config-reference"};
    if (MpiWorld::launched() && cmd != "sweep" && cmd != "run" &&
        std::find(commands.begin(), commands.end(), cmd) != commands.end()) {
      // Each rank would do the same work and write the same files.
      if (MpiWorld::rank() == 0)
        fmt::print(std::cerr,
                   "podsim {}: started by mpirun on {} ranks, but only `podsim run` (one pod "
                   "split across the ranks) and `podsim sweep` (its points spread over them) "
                   "run across ranks; run `podsim {}` without mpirun\n",
                   cmd, MpiWorld::size(), cmd);
      return 2;
    }
    if (cmd == "run") return cmd_run(cmd, rest, false);
    if (cmd == "config") return cmd_run(cmd, rest, true);
    if (cmd == "regress") return cmd_regress(rest);
    if (cmd == "sweep") return cmd_sweep(rest);
    if (cmd == "report") return cmd_report(rest);
    if (cmd == "campaign") return cmd_campaign(rest);
    if (cmd == "bench") return cmd_bench(rest);
    if (cmd == "config-reference") {
      std::cout << podsim::pod_config_reference();
      return 0;
    }
    fmt::print(std::cerr, "podsim: unknown command '{}'\n\n{}", cmd, kUsage);
    return 2;
  } catch (const std::exception& e) {
    using podsim::tools::MpiWorld;
    // Running out of host memory is the config's size meeting the host's limit, not a fault
    // of podsim's: say so (SystemC passes a process's bad_alloc on as a report naming it).
    // A coroutine's stack that cannot be had is the same (SystemC's E518).
    const std::string_view text = e.what();
    const bool no_memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr ||
                           text.find("std::bad_alloc") != std::string_view::npos ||
                           text.find("failed to allocate stack memory") != std::string_view::npos;
    std::string where;  // SystemC's report says which process ran out, and when
    if (const auto at = text.find("In process: "); no_memory && at != std::string_view::npos) {
      std::string_view in = text.substr(at + 12);
      in = in.substr(0, in.find('\n'));
      where = fmt::format(" (in {})", in);
      if (const auto t = in.find(" @ "); t != std::string_view::npos) {
        try {  // SystemC's time in the units podsim's output uses
          where = fmt::format(" (in {} at {} simulated)", in.substr(0, t),
                              podsim::to_string(podsim::parse_time(in.substr(t + 3))));
        } catch (const std::exception&) {
        }
      }
    }
    const std::string what =
        no_memory ? fmt::format(
                        "out of host memory{}: this config needs more than the host (or its "
                        "memory limit) gives; docs/speed.md, \"Host memory\", says what a run "
                        "keeps per GPU",
                        where)
                  : fmt::format("internal error: {}", e.what());
    if (MpiWorld::launched()) {  // the other ranks may be waiting for this one: end them all
      std::ostream terminal(g_terminal_err ? g_terminal_err : std::cerr.rdbuf());
      fmt::print(terminal, "podsim (rank {} of {}): {}\n", MpiWorld::rank(), MpiWorld::size(),
                 what);
      terminal.flush();
      MpiWorld::abort(1);
    }
    fmt::print(std::cerr, "podsim: {}\n", what);
    return 1;
  }
}
}  // namespace

int sc_main(int argc, char* argv[]) {
  using podsim::tools::MpiWorld;
  // First (it starts the process again): a run's heap on huge pages. Other commands start
  // their runs as processes with the tunable already set (sim/tools/process_pool.cpp).
  if (argc > 1 && std::string_view(argv[1]) == "run") podsim::restart_with_huge_heap(argv);
  podsim::install_crash_guard();
  MpiWorld::init(&argc, &argv);
  // Under mpirun, rank 0 speaks for all (the others would print every message again); a rank's
  // own internal error still reaches the terminal (dispatch prints it to the saved stream).
  std::ostringstream silenced;
  std::streambuf* out = std::cout.rdbuf();
  std::streambuf* err = std::cerr.rdbuf();
  if (MpiWorld::rank() != 0) {
    std::cout.rdbuf(silenced.rdbuf());
    std::cerr.rdbuf(silenced.rdbuf());
  }
  g_terminal_err = err;
  MpiWorld::set_silenced(&silenced);
  int rc = dispatch(argc, argv);
  // A rank that started neither a run nor a sweep still takes part in the ranks' agreement.
  if (MpiWorld::launched() && !g_agreed &&
      !agree_to_start(rc == 0 ? Started::nothing : Started::refused) && rc == 0)
    rc = 2;
  MpiWorld::set_silenced(nullptr);
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  MpiWorld::finalize();
  return rc;
}
