// The GPU memory system: TLBs and walks, channel interleaving and bandwidth, clear-on-free.
#include <catch2/catch.hpp>

#include <filesystem>

#include <set>

#include "tests/support/in_process_pod.hpp"
#include "tests/support/run_podsim.hpp"

using namespace podsim;
namespace fs = std::filesystem;
using podsim::test::config_with;
using podsim::test::counter;
using podsim::test::kLocalVa;
using podsim::test::run_podsim;
using podsim::test::write_temp_file;

namespace {

const Breakdown& breakdown(const StatGroup& g, const std::string& name) {
  for (const Stat* s : g.stats())
    if (s->name() == name) return *s->as<Breakdown>();
  throw std::runtime_error("no breakdown " + name);
}
std::size_t part(const Breakdown& b, const std::string& name) {
  for (std::size_t i = 0; i < b.part_count(); ++i)
    if (b.part_name(i) == name) return i;
  throw std::runtime_error("no part " + name);
}
std::vector<double> channel_bytes(const test::PodsimRun& r, int gpu) {
  std::vector<double> v;
  for (const auto& x : r.stats->at("stats")
                           .at("pod.gpu" + std::to_string(gpu) + ".vram.channel_bytes")
                           .at("values")
                           .as_array())
    v.push_back(x.to_number<double>());
  return v;
}
}  // namespace

TEST_CASE(
    "TLB hits, misses and walks are exactly what a sweep implies, and each walk's cost is "
    "in the breakdown",
    "[memory][tlb]") {
  // GPU 0 sweeps GPU 1's 1 MiB buffer twice, four loads per page, each load alone (2 us
  // apart), with a 4-entry fully associative L1 and the default 1,024-entry L2; the driver
  // writes fragments of 64 KiB at most, so the buffer is 16 of them.
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]", "workload.teardown=false",
                              "gpu.gpuvm.l1.entries=4", "gpu.gpuvm.l1.ways=4",
                              "gpu.driver.max_fragment=64KiB"}));
  const std::uint64_t bytes = pod.config().workload.buffer_size.count();
  const std::uint64_t pages = bytes / kPageSize;
  const std::uint64_t import_va = kLocalVa + (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  std::vector<TraceEntry> trace;
  for (int sweep = 0; sweep < 2; ++sweep)
    for (std::uint64_t p = 0; p < pages; ++p)
      for (std::uint64_t b = 0; b < 4; ++b)
        trace.push_back(TraceEntry{Time::us(2 * static_cast<std::int64_t>(trace.size())), 0,
                                   TraceOp::Read, import_va + p * kPageSize + b * 64, 64});
  pod.replay(trace);
  pod.run();
  REQUIRE(pod.ok());
  const std::uint64_t n = trace.size();
  REQUIRE(pod.summary().remote_reads() == n);

  // What the sweep implies, from the importer's page table: one TLB entry per fragment (an
  // aligned group of 2^fragment pages). The first sweep walks once per group; in the second,
  // the L1 holds only the last 4 groups, so each group's first load hits the L2.
  const PageTable* pt = pod.gpu(0).gpuvm.page_table(1);
  REQUIRE(pt != nullptr);
  std::vector<std::uint64_t> groups;
  for (std::uint64_t p = 0; p < pages; ++p) {
    const std::uint64_t vpage = (import_va >> kPageShift) + p;
    const std::uint64_t g = vpage >> pt->lookup(vpage).fragment;
    if (groups.empty() || groups.back() != g) groups.push_back(g);
  }
  const std::uint64_t G = groups.size();
  REQUIRE(std::set<std::uint64_t>(groups.begin(), groups.end()).size() == G);
  REQUIRE(G == 16);
  const StatGroup& vm = pod.gpu(0).gpuvm.stat_group();
  CHECK(counter(vm, "translations") == n);
  CHECK(counter(vm, "walks") == G);
  CHECK(counter(vm, "l2_hits") == G);
  CHECK(counter(vm, "l1_hits") == n - 2 * G);
  // The first walk reads all 4 levels; the rest find the upper levels in the page-walk cache
  // (one 2 MiB region) and read only the last.
  CHECK(counter(vm, "walk_levels_read") == 4 + (G - 1));

  // The GPUVM hop of each load is exactly its translation: L1 lookup; plus the L2 lookup on
  // an L1 miss; plus the walk's levels on an L2 miss.
  const GpuVmConfig& c = pod.config().gpu.gpuvm;
  const Time expected = c.l1.latency * static_cast<std::int64_t>(n) +
                        c.l2.latency * static_cast<std::int64_t>(2 * G) +
                        c.walk_level_latency * static_cast<std::int64_t>(4 + (G - 1));
  const Breakdown& bd = breakdown(pod.gpu(0).agent.stat_group(), "remote_breakdown");
  CHECK(bd.samples() == n);
  CHECK(bd.part_sum(part(bd, "req.gpuvm")) == static_cast<long double>(expected.as_ps()));
}

TEST_CASE(
    "by default a buffer is one TLB entry at each end: VRAM in aligned blocks, the largest "
    "fragments",
    "[memory][tlb]") {
  // GPU 0 loads once from every page of GPU 1's 1 MiB buffer. The buddy-like allocator gives
  // the buffer one aligned 1 MiB block; the driver maps it, at both ends, with a 1 MiB fragment
  // (amdgpu: the largest that holds, up to 2 MiB): one walk on each side, however many pages.
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]", "workload.teardown=false"}));
  const std::uint64_t bytes = pod.config().workload.buffer_size.count();
  REQUIRE(bytes == (1u << 20));
  const std::uint64_t pages = bytes / kPageSize;
  const std::uint64_t import_va = kLocalVa + (2u << 20);
  std::vector<TraceEntry> trace;
  for (std::uint64_t p = 0; p < pages; ++p)
    trace.push_back(TraceEntry{Time::ns(100 * static_cast<std::int64_t>(p)), 0, TraceOp::Read,
                               import_va + p * kPageSize, 64});
  pod.replay(trace);
  pod.run();
  REQUIRE(pod.ok());
  REQUIRE(pod.summary().remote_reads() == pages);
  const PageTable* pt = pod.gpu(0).gpuvm.page_table(1);
  REQUIRE(pt != nullptr);
  CHECK(pt->lookup(import_va >> kPageShift).fragment == 8);  // 2^8 pages: 1 MiB
  CHECK(counter(pod.gpu(0).gpuvm.stat_group(), "walks") == 1);
  // The exporter's NPA VM maps the import's NPA range onto the block with one fragment too.
  GpuNode& exporter = pod.gpu(1);
  const Pte n = pt->lookup(import_va >> kPageShift);
  REQUIRE(n.target == PteTarget::Npa);
  const Pte behind =
      exporter.npa_mmu.page_table().lookup(exporter.npa_mmu.key_of(n.frame << kPageShift, 0));
  REQUIRE(behind.target == PteTarget::Vram);
  CHECK(behind.fragment == 8);
  CHECK(behind.frame % 256 == 0);
  // Its TLB missed once for the buffer; the rest of its translations are the driver's
  // mailbox writes (ring pages), which may each miss.
  const std::uint64_t translations = counter(exporter.npa_mmu.stat_group(), "translations");
  REQUIRE(translations >= pages);
  CHECK(counter(exporter.npa_mmu.stat_group(), "tlb_misses") <= 1 + (translations - pages));
}

TEST_CASE("channel interleaving spreads a stream over every channel", "[memory][vram]") {
  // GPU 0 streams 256 B loads through its own 16 MiB buffer, with enough loads in flight
  // (4,096) to keep many channels busy.
  auto stream = [](const char* allocation) {
    return run_podsim({"run",   "--quiet",
                       "--set", "pod.gpus=2",
                       "--set", "workload.initiators=[0]",
                       "--set", std::string("gpu.vram.allocation=") + allocation,
                       "--set", "workload.buffer_size=16MiB",
                       "--set", "workload.traffic.local_fraction=1",
                       "--set", "workload.traffic.pattern=stream",
                       "--set", "workload.traffic.access_size=256B",
                       "--set", "workload.traffic.read_fraction=1",
                       "--set", "workload.traffic.outstanding=4096",
                       "--set", "workload.traffic.accesses=65536",
                       "--set", "workload.teardown=false"});
  };
  for (const char* allocation : {"scattered", "first_fit"}) {
    INFO(allocation);
    auto r = stream(allocation);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.stat("pod.gpu0.agent.local_accesses") == 65536);
    const auto ch = channel_bytes(r, 0);
    REQUIRE(ch.size() == 12 * 16);
    double total = 0;
    for (double b : ch) {
      CHECK(b > 0);  // every channel took part
      total += b;
    }
    // The stream, and the control path's writes into the rings' pages.
    CHECK(total == 16.0 * 1024 * 1024 + r.stat("pod.gpu0.mailbox.bytes_landed"));
    CHECK(r.stat("pod.gpu0.vram.channel_balance") > 0.85);
    if (std::string(allocation) == "first_fit") {
      // Contiguous pages (2 MiB TLB fragments, so few walks): many channels at once, far
      // more than one channel's 102.08 GB/s.
      const double gbps = r.stat("pod.gpu0.agent.local_bytes") /
                          r.stat("pod.summary.access_phase_time");  // bytes per ns = GB/s
      CHECK(gbps > 10 * 102.08);
    }
  }
}

TEST_CASE("a stream confined to one channel saturates at that channel's bandwidth",
          "[memory][vram]") {
  // First-fit pages and a 2 MiB interleave: the rings' receive pages take VRAM's first 2 MiB
  // (channel 0), and GPU 0's 1 MiB buffer sits on channel 1 alone. 256 loads in flight are
  // more than the channel can serve in one access latency.
  auto r = run_podsim({"run",   "--quiet",
                       "--set", "pod.gpus=2",
                       "--set", "workload.initiators=[0]",
                       "--set", "gpu.vram.allocation=first_fit",
                       "--set", "gpu.vram.interleave=2MiB",
                       "--set", "workload.traffic.local_fraction=1",
                       "--set", "workload.traffic.pattern=stream",
                       "--set", "workload.traffic.access_size=256B",
                       "--set", "workload.traffic.read_fraction=1",
                       "--set", "workload.traffic.outstanding=256",
                       "--set", "workload.traffic.accesses=16384",
                       "--set", "workload.teardown=false"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto ch = channel_bytes(r, 0);
  CHECK(ch[0] == r.stat("pod.gpu0.mailbox.bytes_landed"));
  CHECK(ch[1] == 16384.0 * 256);
  for (std::size_t i = 2; i < ch.size(); ++i)
    CHECK(ch[i] == 0);
  const double gbps =
      r.stat("pod.gpu0.agent.local_bytes") / r.stat("pod.summary.access_phase_time");
  CHECK(gbps == Approx(102.08).epsilon(0.02));
  CHECK(gbps <= 102.08);
  CHECK(r.stat("pod.gpu0.vram.queue_delay", "mean") > 100);  // requests queue for the channel
}

namespace {
// GPU 0 allocates 3 MiB of a 4 MiB VRAM, frees it, and allocates 3 MiB again at once.
// 6 MiB of VRAM: 2 MiB for the rings' receive pages, 4 MiB for buffers.
std::string realloc_config(bool clear_on_free) {
  return std::string(R"({
    "pod": {"gpus": 2},
    "gpu": {"vram": {"capacity": "6MiB", "clear_on_free": )") +
         (clear_on_free ? "true" : "false") + R"(}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "3MiB", "name": "a"},
      {"gpu": 0, "op": "close", "buffer": "a"},
      {"gpu": 0, "op": "alloc", "size": "3MiB", "name": "b"},
      {"gpu": 0, "op": "alloc", "size": "2MiB", "name": "c", "expect": "ENOMEM"}
    ], "teardown": false}})";
}
}  // namespace

TEST_CASE(
    "clear-on-free: freed pages are zeroed through the channels, and an allocation that "
    "needs them waits",
    "[memory][vram]") {
  auto r = run_podsim({"run", write_temp_file("realloc.json", realloc_config(true))});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // All of a was zeroed, and the clearing shows in the channels' bytes.
  CHECK(r.stat("pod.gpu0.vram.bytes_cleared") == 3.0 * 1024 * 1024);
  double total = 0;
  for (double b : channel_bytes(r, 0))
    total += b;
  CHECK(total == r.stat("pod.gpu0.vram.bytes_read") + r.stat("pod.gpu0.vram.bytes_written") +
                     r.stat("pod.gpu0.vram.bytes_cleared"));
  // b needed 2 MiB more than the 1 MiB never used: its pages came no sooner than the engine,
  // starting when a's close began, could zero 2 MiB at 1 TB/s.
  CHECK(r.stat("pod.gpu0.vram.allocation_waits") == 1);
  auto started = [&](std::size_t step) {
    return r.run->at("steps").as_array().at(step).at("started_ns").to_number<double>();
  };
  const double clear_2mib_ns = 2.0 * 1024 * 1024 / 1000.0;  // at 1 TB/s: 1,000 bytes per ns
  const double earliest = started(1) + clear_2mib_ns - started(2);
  const double waited = r.stat("pod.gpu0.vram.allocation_wait", "max");
  CHECK(earliest > 0);
  CHECK(waited >= earliest - 1e-6);
  CHECK(waited <= earliest + 50);

  // Without clear-on-free, the same allocation is immediate and nothing is cleared.
  auto off = run_podsim({"run", write_temp_file("realloc.json", realloc_config(false))});
  INFO(off.err);
  REQUIRE(off.exit_code == 0);
  CHECK(off.stat("pod.gpu0.vram.bytes_cleared") == 0);
  CHECK(off.stat("pod.gpu0.vram.allocation_waits") == 0);
}

TEST_CASE("functional VRAM data on or off: every file a run writes is the same", "[memory][data]") {
  // Loads, stores and atomics of several sizes, both ways: the files a run writes are
  // byte-identical (no stat depends on the bytes moved), only the stored bytes differ.
  const std::vector<std::string> sets = {"--set", "workload.traffic.accesses=1500",
                                         "--set", "workload.traffic.atomic_fraction=0.2",
                                         "--set", "workload.traffic.local_fraction=0.2",
                                         "--set", "workload.traffic.access_size=128B"};
  auto run = [&](const char* on) {
    std::vector<std::string> args = {"run", "--quiet"};
    args.insert(args.end(), sets.begin(), sets.end());
    args.insert(args.end(), {"--set", std::string("gpu.vram.functional_data=") + on});
    return run_podsim(args);
  };
  const auto with = run("true"), without = run("false");
  REQUIRE(with.exit_code == 0);
  REQUIRE(without.exit_code == 0);
  CHECK(with.stat("pod.summary.remote_accesses") > 0);
  for (const char* f :
       {"stats.json", "latency.csv", "latency_histogram.csv", "breakdown.csv", "timeseries.csv"}) {
    INFO(f);
    CHECK(test::slurp(with.out_dir + "/" + f) == test::slurp(without.out_dir + "/" + f));
  }
}

TEST_CASE("with functional data off, stores are not kept and functional reads give zeros",
          "[memory][data]") {
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]", "workload.teardown=false",
                              "gpu.vram.functional_data=false", "workload.traffic.accesses=400",
                              "workload.traffic.read_fraction=0"}));
  pod.run();
  REQUIRE(pod.ok());
  REQUIRE(pod.summary().remote_writes() == 400);
  CHECK(pod.gpu(1).vram.data().lines() == 0);
  unsigned char buf[64];
  std::fill(std::begin(buf), std::end(buf), 0xAB);
  pod.gpu(1).vram.write_bytes(4096, buf, 64);
  pod.gpu(1).vram.read_bytes(4096, buf, 64);
  CHECK(std::all_of(std::begin(buf), std::end(buf), [](unsigned char c) { return c == 0; }));
}

// Host memory: what a run keeps follows the pages and events the model needs, and running out
// is said in words. Both run the binary under `ulimit -v`, which AddressSanitizer's shadow
// memory cannot live with: the sanitizer build leaves them out (they check sizes, not
// memory errors).
TEST_CASE("the largest buffers cost their runs of pages, not a host entry per page",
          "[memory][host]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("not under AddressSanitizer (ulimit -v)");
  return;
#else
  // Two GPUs, each exporting a 16 GiB buffer (4 Mi pages) that the other imports, maps,
  // accesses and releases: pinned page by page and tabled per page, this took ~60 MB of host
  // memory per GiB per GPU (about 2 GB here) and hours in the page tables' moves.
  const auto r = test::run_podsim_limited(
      700'000, {"run", "--set", "pod.gpus=2", "--set", "workload.buffer_size=16GiB", "--set",
                "workload.traffic.accesses=100"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.summary.remote_accesses") == 200);
  CHECK(r.stat("pod.gpu0.vram.pinned_pages") == 0);
#endif
}

TEST_CASE("a run that runs out of host memory says so: exit 1, no output that looks complete",
          "[memory][host]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("not under AddressSanitizer (ulimit -v)");
  return;
#else
  const auto r = test::run_podsim_limited(
      300'000, {"run", "--set", "pod.gpus=2", "--set", "workload.buffer_size=64GiB", "--set",
                "workload.traffic.accesses=100"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("podsim: out of host memory") &&
                        Catch::Contains("Host memory") && !Catch::Contains("internal error") &&
                        !Catch::Contains("E549"));
  CHECK_FALSE(r.run.has_value());
  CHECK_FALSE(r.stats.has_value());
#endif
}

TEST_CASE("under any memory limit a run ends well or says it ran out of host memory",
          "[memory][host]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("not under AddressSanitizer (ulimit -v)");
  return;
#else
  // helios-72 under limits from too small to start to enough: where the limit bites decides
  // what fails first (an allocation while setting up, a SystemC coroutine's stack: E518, an
  // allocation in a process, or while writing the outputs); each way the message is the
  // same, and nothing is written.
  int ran_out = 0, finished = 0;
  for (unsigned long kib : {40'000ul, 100'000ul, 160'000ul, 220'000ul, 280'000ul, 340'000ul,
                            400'000ul, 460'000ul, 520'000ul, 580'000ul, 1'000'000ul}) {
    const auto r =
        test::run_podsim_limited(kib, {"run", test::source_path("configs/helios-72.json"), "--set",
                                       "workload.traffic.accesses=10"});
    INFO("ulimit -v " << kib << ": exit " << r.exit_code << "\n" << r.err);
    if (r.exit_code == 0) {
      ++finished;
      continue;
    }
    ++ran_out;
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("podsim: out of host memory") &&
                          !Catch::Contains("internal error") && !Catch::Contains(" ps"));
    CHECK_FALSE(r.run.has_value());
    CHECK_FALSE(r.stats.has_value());
  }
  CHECK(ran_out > 0);
  CHECK(finished > 0);
#endif
}

TEST_CASE("host memory does not grow with simulated time: half a second of page evictions",
          "[memory][host]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("not under AddressSanitizer (ulimit -v)");
  return;
#else
  // Unpinned memory with an eviction every 100 ns (mean) while the importer waits 500 ms:
  // every sleep of the eviction worker used to leave its timer's ID in the scheduler's set of
  // cancelled timers, ~0.5 MB per simulated ms (250 MB here); now the run keeps what is pending.
  const std::string cfg = write_temp_file("evictions.json", R"({
    "pod": {"gpus": 2}, "sim": {"max_time": "2s"},
    "gpu": {"driver": {"exported_memory": "unpinned",
                       "migration": {"eviction_interval": "100ns"}}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 1, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 1, "op": "wait", "for": "500ms"},
      {"gpu": 1, "op": "access", "mappings": ["m"], "accesses": 10}]}})");
  const auto r = test::run_podsim_limited(120'000, {"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.gpu0.driver.evictions") > 10'000);
#endif
}

TEST_CASE("a run that runs out of memory while the pod is built leaves no earlier outputs",
          "[memory][host]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("not under AddressSanitizer (ulimit -v)");
  return;
#else
  const auto first = test::run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=5"});
  REQUIRE(first.exit_code == 0);
  REQUIRE(fs::exists(fs::path(first.out_dir) / "run.json"));
  const auto r =
      test::run_podsim_limited(200'000,
                               {"run", test::source_path("configs/pod-1024.json"), "--set",
                                "workload.traffic.accesses=1", "--out", first.out_dir},
                               false);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("podsim: out of host memory"));
  for (const char* f : {"run.json", "stats.json", "config.json", "latency.csv"})
    CHECK_FALSE(fs::exists(fs::path(first.out_dir) / f));
#endif
}
