// Collectives against analysis: each expectation is computed from the resolved config (see
// analysis.hpp), independently of the model.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "tests/support/run_podsim.hpp"
#include "tests/validation/analysis.hpp"

using namespace podsim;
using podsim::test::PodsimRun;
using podsim::test::read_csv;
using podsim::test::run_podsim;

namespace {

PodsimRun collective(const std::vector<std::string>& sets) {
  std::vector<std::string> args = {
      "run", "--quiet", "--set", "workload.kind=collective", "--set", "workload.setup=direct"};
  for (const auto& s : sets)
    args.insert(args.end(), {"--set", s});
  return run_podsim(args);
}

double column(const PodsimRun& r, const std::string& name) {
  const auto rows = read_csv(r.out_dir + "/collectives.csv");
  REQUIRE(rows.size() == 1);
  return std::stod(rows[0].at(name));
}

// What a participant's receive side carries at most, in payload GB/s, when every store it
// makes is answered (its acknowledgement arrives on the same side as the data it receives):
// per `piece` bytes of 256 B stores, their packets and acknowledgements, and one 64 B flag
// with its acknowledgement.
double receive_bound_gbps(const boost::json::value& c, std::uint64_t piece) {
  const double stores = static_cast<double>(piece) / 256;
  const double ack = static_cast<double>(analysis::packet_wire_ps(c, 0));
  const double ps = stores * (static_cast<double>(analysis::packet_wire_ps(c, 256)) + ack) +
                    static_cast<double>(analysis::packet_wire_ps(c, 64)) + ack;
  return static_cast<double>(piece) / ps * 1e3;  // bytes per ps = 1e3 GB/s
}

}  // namespace

TEST_CASE("ring all_reduce at a large size: bus bandwidth within 5% of the port's bound",
          "[validation][collective]") {
  // 8 GPUs, 8 MiB: 1 MiB shares in 16 pieces of 64 KiB. Functional data off (the times are
  // the same either way: tests/sc/test_collective.cpp).
  const auto r =
      collective({"workload.collective.sizes=[\"8MiB\"]", "workload.collective.iterations=1",
                  "workload.collective.warmup_iterations=0", "gpu.vram.functional_data=false"});
  REQUIRE(r.exit_code == 0);
  const auto& c = *r.config;
  const double bound =
      receive_bound_gbps(c, analysis::bytes(c, {"workload", "collective", "chunk_size"}));
  // The bound's data part alone: port rate x the payload efficiency of 256 B packets.
  const double port =
      static_cast<double>(analysis::port_rate(c)) / 8e9 * analysis::payload_efficiency(c, 256);
  CHECK(bound < port);
  const double busbw = column(r, "busbw_GBps");
  INFO("bus bandwidth " << busbw << " GB/s, bound " << bound << " GB/s (data alone " << port
                        << ")");
  CHECK(busbw <= bound);
  CHECK(busbw >= 0.95 * bound);
}

TEST_CASE("ring all_reduce at a small size: time within 10% of its chain of latencies",
          "[validation][collective]") {
  // 8 GPUs, 512 B: each share is one 64 B line. A call is 2(n - 1) hops around the ring, each
  // a local load, a store to the next participant answered, its flag landing there, and the
  // next participant's poll seeing it (polls are back to back: half a poll's round trip on
  // average, then the rest of the one that sees it).
  const auto r =
      collective({"workload.collective.sizes=[\"512B\"]", "workload.collective.iterations=4",
                  "workload.collective.warmup_iterations=1"});
  REQUIRE(r.exit_code == 0);
  const auto& c = *r.config;
  using analysis::ps;
  const std::int64_t issue = ps(c, {"gpu", "compute", "issue_latency"});
  const std::int64_t gpuvm = ps(c, {"gpu", "gpuvm", "l1", "latency"});  // warm: an L1 hit
  const std::int64_t npa = ps(c, {"gpu", "npa_mmu", "l1", "latency"});
  const std::int64_t vram =
      ps(c, {"gpu", "vram", "access_latency"}) +
      analysis::serialize_ps(64, analysis::bps(c, {"gpu", "vram", "channel_bandwidth"}));
  const std::int64_t fabric = 2 * analysis::flight_ps(c) + ps(c, {"fabric", "switch", "latency"}) +
                              analysis::port_tx_ps(c) + analysis::port_rx_ps(c);
  const std::int64_t local = issue + gpuvm + vram;
  const std::int64_t store = issue + gpuvm + fabric + analysis::packet_wire_ps(c, 64) + npa + vram +
                             fabric + analysis::packet_wire_ps(c, 0);
  const std::int64_t flag = issue + gpuvm + fabric + analysis::packet_wire_ps(c, 64) + npa;
  const std::int64_t poll = local / 2 + vram;
  const double hops = 2 * (8 - 1);
  const double want_us = hops * static_cast<double>(local + store + flag + poll) / 1e6;
  const double got_us = column(r, "time_us");
  INFO("a call took " << got_us << " us; the chain of latencies is " << want_us << " us");
  CHECK(got_us == Approx(want_us).epsilon(0.10));
  CHECK(column(r, "wrong") == 0);
}

TEST_CASE("uniform all_to_all approaches the injection bound", "[validation][collective]") {
  // 8 GPUs, 8 MiB each: every participant stores 7 blocks of 1 MiB, one peer after another
  // (each starting at a different peer), so every receive side is busy.
  const auto r =
      collective({"workload.collective.op=all_to_all", "workload.collective.algorithm=one_shot",
                  "workload.collective.sizes=[\"8MiB\"]", "workload.collective.iterations=1",
                  "workload.collective.warmup_iterations=0", "gpu.vram.functional_data=false"});
  REQUIRE(r.exit_code == 0);
  // The flags are 7 per call: the bound for 1 MiB pieces.
  const double bound = receive_bound_gbps(*r.config, 1 << 20);
  const double busbw = column(r, "busbw_GBps");
  INFO("bus bandwidth " << busbw << " GB/s, bound " << bound << " GB/s");
  CHECK(busbw <= bound);
  CHECK(busbw >= 0.90 * bound);
}

TEST_CASE("skewed all_to_all_v: the slowest participant's bytes over its port set the time",
          "[validation][collective]") {
  // A mixture of experts' dispatch on 8 GPUs with a hot expert: every GPU sends 256 KiB to
  // each peer, except 1 MiB to GPU 3. GPU 3's receive side carries 7 MiB of stores and the
  // acknowledgements of its own 7 x 256 KiB; every other side carries less.
  constexpr std::uint32_t n = 8, hot = 3;
  std::vector<std::uint64_t> blocks;
  std::string list;
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::uint64_t b = j == hot ? 1 << 20 : 256 << 10;
      blocks.push_back(b);
      list += fmt::format("{}\"{}B\"", list.empty() ? "" : ",", b);
    }
  const auto r = collective(
      {"workload.collective.op=all_to_all_v", "workload.collective.algorithm=one_shot",
       "workload.collective.send_bytes=[" + list + "]", "workload.collective.iterations=1",
       "workload.collective.warmup_iterations=0", "gpu.vram.functional_data=false"});
  REQUIRE(r.exit_code == 0);
  const auto& c = *r.config;
  const double data = static_cast<double>(analysis::packet_wire_ps(c, 256));
  const double ack = static_cast<double>(analysis::packet_wire_ps(c, 0));
  double slowest_ps = 0;
  for (std::uint32_t g = 0; g < n; ++g) {
    double sent = 0, received = 0;  // stores over the fabric (a GPU's own block stays local)
    for (std::uint32_t k = 0; k < n; ++k)
      if (k != g) {
        sent += static_cast<double>(blocks[g * n + k]) / 256;
        received += static_cast<double>(blocks[k * n + g]) / 256;
      }
    // Each side: one way's stores and the other way's acknowledgements.
    slowest_ps = std::max({slowest_ps, received * data + sent * ack, sent * data + received * ack});
  }
  const double want_us = slowest_ps / 1e6;
  const double got_us = column(r, "time_us");
  INFO("the call took " << got_us << " us; GPU 3's receive side needs " << want_us << " us");
  CHECK(got_us >= want_us);
  CHECK(got_us <= 1.10 * want_us);
}
