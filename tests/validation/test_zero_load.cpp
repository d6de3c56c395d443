// Zero load: one remote 64 B read takes exactly the sum of the configured latencies on its
// path, computed here from the resolved config, independently of the model; and changing one
// component's latency moves the result by exactly that much (twice where it is crossed twice).
#include <catch2/catch.hpp>
#include <cstdint>

#include "sim/base/units.hpp"
#include "tests/support/run_podsim.hpp"

using namespace podsim;
using podsim::test::run_podsim;

namespace {

const std::vector<std::string> kOneRead = {"--set", "pod.gpus=2",
                                           "--set", "workload.initiators=[0]",
                                           "--set", "workload.traffic.accesses=1",
                                           "--set", "workload.traffic.read_fraction=1",
                                           "--set", "workload.traffic.access_size=64B"};

struct ZeroLoad {
  std::int64_t model_ps;     // what podsim measured
  std::int64_t analytic_ps;  // what the config says it must be
};

std::int64_t t(const boost::json::value& cfg, std::initializer_list<const char*> path) {
  const boost::json::value* v = &cfg;
  for (const char* k : path)
    v = &v->at(k);
  return parse_time(std::string(v->as_string())).as_ps();
}
std::uint64_t n(const boost::json::value& cfg, std::initializer_list<const char*> path) {
  const boost::json::value* v = &cfg;
  for (const char* k : path)
    v = &v->at(k);
  return v->to_number<std::uint64_t>();
}
std::uint64_t bits_per_s(const boost::json::value& cfg, std::initializer_list<const char*> path) {
  const boost::json::value* v = &cfg;
  for (const char* k : path)
    v = &v->at(k);
  return parse_bandwidth(std::string(v->as_string())).bits_per_second();
}
// ceil(bytes * 8 bits / rate), in ps.
std::int64_t serialize_ps(std::uint64_t bytes, std::uint64_t bps) {
  unsigned __int128 num = static_cast<unsigned __int128>(bytes) * 8 * 1'000'000'000'000ull;
  return static_cast<std::int64_t>((num + bps - 1) / bps);
}
std::uint64_t bytes_of(const boost::json::value& cfg, std::initializer_list<const char*> path) {
  const boost::json::value* v = &cfg;
  for (const char* k : path)
    v = &v->at(k);
  return parse_bytes(std::string(v->as_string())).count();
}
// A packet of `payload` data bytes on a port: header plus data in whole granules, packed into
// DL flits (dl_flit wire bytes per dl_payload TL bytes, plus Ethernet framing per flit).
std::int64_t packet_wire_ps(const boost::json::value& c, std::uint64_t payload) {
  const std::uint64_t header = bytes_of(c, {"fabric", "port", "tl_header"});
  const std::uint64_t granule = bytes_of(c, {"fabric", "port", "tl_granule"});
  const std::uint64_t tl = (header + payload + granule - 1) / granule * granule;
  const std::uint64_t flit = bytes_of(c, {"fabric", "port", "dl_flit"});
  const std::uint64_t carried = bytes_of(c, {"fabric", "port", "dl_payload"});
  const std::uint64_t eth = bytes_of(c, {"fabric", "port", "ethernet_overhead"});
  const std::uint64_t bps =
      bits_per_s(c, {"fabric", "port", "lane_rate"}) * n(c, {"fabric", "port", "lanes"});
  const unsigned __int128 bits =
      static_cast<unsigned __int128>(tl) * (flit + eth) * 8 * 1'000'000'000'000ull;
  const unsigned __int128 per_s = static_cast<unsigned __int128>(carried) * bps;
  return static_cast<std::int64_t>((bits + per_s - 1) / per_s);
}

// The path of a remote read, hop by hop, from the resolved config.
std::int64_t analytic_read_ps(const boost::json::value& c) {
  const std::uint64_t size = 64;
  const std::int64_t pipeline = t(c, {"fabric", "port", "pipeline_latency"});
  const std::int64_t serdes = t(c, {"fabric", "port", "serdes_latency"});
  const std::int64_t fec = t(c, {"fabric", "port", "fec_latency"});
  const std::int64_t port_tx = pipeline + serdes;
  const std::int64_t port_rx = serdes + fec + pipeline;
  const std::uint64_t cable_um =
      parse_length(std::string(c.at("fabric").at("link").at("cable_length").as_string())).as_um();
  const std::int64_t flight = static_cast<std::int64_t>(
      (cable_um * t(c, {"fabric", "link", "delay_per_metre"}) + 500'000) / 1'000'000);
  const std::int64_t sw = t(c, {"fabric", "switch", "latency"});
  // Both TLBs are cold: the first access walks every level.
  const std::int64_t gpuvm = t(c, {"gpu", "gpuvm", "tlb_hit_latency"}) +
                             static_cast<std::int64_t>(n(c, {"gpu", "gpuvm", "walk_levels"})) *
                                 t(c, {"gpu", "gpuvm", "walk_level_latency"});
  const std::int64_t npa = t(c, {"gpu", "npa_mmu", "tlb_hit_latency"}) +
                           static_cast<std::int64_t>(n(c, {"gpu", "npa_mmu", "walk_levels"})) *
                               t(c, {"gpu", "npa_mmu", "walk_level_latency"});
  const std::int64_t vram = t(c, {"gpu", "vram", "access_latency"}) +
                            serialize_ps(size, bits_per_s(c, {"gpu", "vram", "channel_bandwidth"}));
  const std::int64_t issue = t(c, {"gpu", "compute", "issue_latency"});

  // Cut-through: a packet's wire time is paid once, where its tail arrives.
  const std::int64_t request = port_tx + flight + sw + flight + packet_wire_ps(c, 0) + port_rx;
  const std::int64_t response = port_tx + flight + sw + flight + packet_wire_ps(c, size) + port_rx;
  return issue + gpuvm + request + npa + vram + response;
}

ZeroLoad zero_load(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), kOneRead.begin(), kOneRead.end());
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_podsim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.stat("pod.summary.remote_accesses") == 1);
  // min == max == the one sample, exact to the ps.
  const double ns = r.stat("pod.summary.remote_latency", "min");
  REQUIRE(r.stat("pod.summary.remote_latency", "max") == ns);
  return {static_cast<std::int64_t>(ns * 1000.0 + 0.5), analytic_read_ps(*r.config)};
}

}  // namespace

TEST_CASE("zero load: one remote 64 B read costs the sum of its path's latencies",
          "[validation][zero-load]") {
  ZeroLoad z = zero_load();
  CHECK(z.model_ps == z.analytic_ps);
  CHECK(z.analytic_ps > 500'000);  // a sanity bound: hundreds of ns
}

TEST_CASE("zero load: each component's latency moves the result by exactly its change",
          "[validation][zero-load]") {
  const ZeroLoad base = zero_load();
  REQUIRE(base.model_ps == base.analytic_ps);
  struct Change {
    std::string set;
    std::int64_t expected_delta_ps;  // how often the path crosses it, times the change
  };
  for (const Change& c : {
           Change{"fabric.switch.latency=250ns", 2 * 100'000},       // crossed twice
           Change{"gpu.vram.access_latency=170ns", 50'000},          // once
           Change{"fabric.port.fec_latency=30ns", 2 * 10'000},       // two receivers
           Change{"fabric.port.serdes_latency=9ns", 4 * 1'000},      // 2 tx + 2 rx sides
           Change{"gpu.gpuvm.walk_level_latency=60ns", 4 * 10'000},  // 4 levels, once
           Change{"gpu.npa_mmu.tlb_hit_latency=15ns", 5'000},        // once
           Change{"fabric.link.cable_length=3m", 4 * 5'000},         // 4 cable crossings
           Change{"gpu.compute.issue_latency=7ns", 2'000},
       }) {
    INFO(c.set);
    const ZeroLoad z = zero_load({"--set", c.set});
    CHECK(z.model_ps == z.analytic_ps);
    CHECK(z.model_ps - base.model_ps == c.expected_delta_ps);
  }
}
