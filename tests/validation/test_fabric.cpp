// The fabric against analysis: each expectation is computed from the resolved config (see
// analysis.hpp), independently of the model.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "tests/support/run_podsim.hpp"
#include "tests/validation/analysis.hpp"

using namespace podsim;
using podsim::test::PodsimRun;
using podsim::test::run_podsim;
using podsim::test::source_path;

namespace {

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& sets) {
  for (const auto& s : sets)
    base.insert(base.end(), {"--set", s});
  return base;
}

// GPU 0 streams 256 B stores to GPU 1 with enough in flight to fill the link.
const std::vector<std::string> kStream = {"pod.gpus=2",
                                          "workload.initiators=[0]",
                                          "workload.traffic.read_fraction=0",
                                          "workload.traffic.access_size=256B",
                                          "workload.traffic.outstanding=1024",
                                          "workload.traffic.accesses=40000",
                                          "workload.teardown=false"};

double stream_gbps(const PodsimRun& r) {
  return r.stat("pod.summary.achieved_bandwidth");
}

}  // namespace

TEST_CASE("a saturated stream reaches link rate x payload efficiency within 2%, never more",
          "[validation][fabric][bandwidth]") {
  // Long enough (about 170 us) that filling and draining the pipe is well under 1%.
  for (auto [size, count] : {std::pair{"64B", 200'000}, std::pair{"256B", 60'000}}) {
    INFO("stores of " << size);
    auto sized = run_podsim(
        with(with({"run"}, kStream), {std::string("workload.traffic.access_size=") + size,
                                      fmt::format("workload.traffic.accesses={}", count)}));
    REQUIRE(sized.exit_code == 0);
    const std::uint64_t payload = parse_bytes(size).count();
    const double limit_gbps = static_cast<double>(analysis::port_rate(*sized.config)) / 8e9 *
                              analysis::payload_efficiency(*sized.config, payload);
    const double got = stream_gbps(sized);
    CHECK(got <= limit_gbps * (1 + 1e-9));
    CHECK(got >= limit_gbps * 0.98);
    // The payload efficiency the run reports is the analytic one for its data packets.
    CHECK(sized.stat("pod.gpu0.port0.tx.payload_efficiency") ==
          Approx(analysis::payload_efficiency(*sized.config, payload)).epsilon(0.01));
  }
}

TEST_CASE("uniform random traffic at 50% and 80% load: switch output queueing is M/D/1",
          "[validation][fabric][queueing]") {
  for (double load : {0.5, 0.8}) {
    INFO("offered load " << load);
    // 32 GPUs on one output-queued switch; every GPU stores 256 B (posted: each output
    // carries one packet size) to uniformly random peers at Poisson times.
    auto r = run_podsim({"run", "--set", "pod.gpus=32", "--set", "workload.traffic.read_fraction=0",
                         "--set", "workload.traffic.access_size=256B", "--set",
                         "workload.traffic.injection=poisson", "--set",
                         fmt::format("workload.traffic.offered_load={}", load), "--set",
                         "workload.traffic.posted_writes=true", "--set",
                         "workload.traffic.duration=40us", "--set", "workload.teardown=false",
                         // the GPUs' own translation must not shape the arrivals: enough
                         // walkers and TLB entries that cold misses do not bunch up
                         "--set", "gpu.gpuvm.walkers=4096", "--set", "gpu.gpuvm.l1.entries=1024",
                         "--set", "gpu.gpuvm.l1.ways=1024"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    // M/D/1: a fixed service time S (one packet's wire time), Poisson arrivals at rate
    // rho / S at every output: mean wait = rho S / (2 (1 - rho)).
    const double s_ns = static_cast<double>(analysis::packet_wire_ps(*r.config, 256)) / 1000.0;
    const double md1 = load * s_ns / (2 * (1 - load));
    const double measured = r.stat("pod.fabric.plane0.switch0.output_queue_delay.request", "mean");
    CHECK(r.stat("pod.fabric.plane0.switch0.output_queue_delay.request", "count") > 100'000);
    CHECK(measured == Approx(md1).epsilon(0.10));
  }
}

TEST_CASE(
    "many-to-one hotspot: back-pressure holds, nothing is lost, the hot port runs at "
    "line rate",
    "[validation][fabric][hotspot]") {
  std::string initiators = "workload.initiators=[";
  for (int g = 1; g < 16; ++g)
    initiators += (g > 1 ? "," : "") + std::to_string(g);
  initiators += "]";
  auto r = run_podsim(
      with({"run"}, {"pod.gpus=16", initiators, "workload.targets=[0]",
                     "workload.traffic.read_fraction=0", "workload.traffic.access_size=256B",
                     "workload.traffic.outstanding=256", "workload.traffic.accesses=3000"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);  // finished: no deadlock; invariants held
  // No loss: every store issued completed and reached GPU 0's memory.
  CHECK(r.stat("pod.summary.remote_accesses") == 15 * 3000);
  CHECK(r.stat("pod.gpu0.vram.writes") == 15 * 3000 + r.stat("pod.gpu0.mailbox.writes_landed"));
  // Back-pressure: senders ran out of credits and packets waited in the switch's inputs.
  double stalls = 0;
  for (int g = 1; g < 16; ++g)
    stalls += r.stat(fmt::format("pod.gpu{}.port0.tx.credit_stalls", g));
  CHECK(stalls > 0);
  CHECK(r.stat("pod.fabric.plane0.switch0.input_holds") > 0);
  // The hot port delivered at its line rate (times the payload efficiency) throughout.
  const double line = static_cast<double>(analysis::port_rate(*r.config)) / 8e9 *
                      analysis::payload_efficiency(*r.config, 256);
  CHECK(r.stat("pod.summary.achieved_bandwidth") <= line * (1 + 1e-9));
  CHECK(r.stat("pod.summary.achieved_bandwidth") >= line * 0.98);
}

TEST_CASE("link errors: replays cut goodput by the predicted fraction",
          "[validation][fabric][replay]") {
  auto clean = run_podsim(with({"run"}, kStream));
  REQUIRE(clean.exit_code == 0);
  for (double p : {0.01, 0.05}) {
    INFO("flit error rate " << p);
    auto noisy = run_podsim(
        with(with({"run"}, kStream), {fmt::format("fabric.link.flit_error_rate={}", p)}));
    REQUIRE(noisy.exit_code == 0);
    // Each DL flit (dl_payload TL bytes) fails with probability p, and each failure costs
    // the link one replay penalty: goodput falls to flit / (flit + p x penalty).
    const double flit = static_cast<double>(analysis::tl_wire_ps(
        *noisy.config, analysis::bytes(*noisy.config, {"fabric", "port", "dl_payload"})));
    const double penalty = static_cast<double>(analysis::replay_penalty_ps(*noisy.config));
    const double predicted_cut = 1 - flit / (flit + p * penalty);
    const double measured_cut = 1 - stream_gbps(noisy) / stream_gbps(clean);
    CHECK(noisy.stat("pod.gpu0.port0.tx.replays") > 0);
    CHECK(measured_cut == Approx(predicted_cut).epsilon(0.10));
  }
}

TEST_CASE(
    "uniform reads at 80% load: round robin keeps latency near zero load, strict "
    "priority starves requests behind responses",
    "[validation][fabric][arbitration]") {
  auto run = [](const char* arbitration) {
    return run_podsim({"run", "--quiet", source_path("configs/study-load.json"), "--set",
                       "workload.traffic.offered_load=0.8", "--set",
                       std::string("fabric.port.arbitration=") + arbitration});
  };
  auto rr = run("round_robin");
  auto sp = run("strict_priority");
  REQUIRE(rr.exit_code == 0);
  REQUIRE(sp.exit_code == 0);
  // Round robin: the offered bandwidth is carried, and queueing adds little.
  const double offered_gbps = 8 * 0.8 * analysis::bps(*rr.config, {"fabric", "port", "lane_rate"}) *
                              4 / 8e9 * 256.0 / (256 + 16) * 628.0 / (640 + 38);
  CHECK(rr.stat("pod.summary.achieved_bandwidth") > 0.85 * offered_gbps);
  CHECK(rr.stat("pod.summary.achieved_bandwidth") < offered_gbps);
  CHECK(rr.stat("pod.summary.remote_latency", "mean") < 1.1 * 617);
  // Strict priority: requests wait longer than responses at the switch outputs (their bursts,
  // released together, then load the responders in bursts), and the pod carries less.
  CHECK(sp.stat("pod.fabric.plane0.switch0.output_queue_delay.request", "mean") >
        2 * sp.stat("pod.fabric.plane0.switch0.output_queue_delay.response", "mean"));
  CHECK(sp.stat("pod.summary.achieved_bandwidth") <
        0.8 * rr.stat("pod.summary.achieved_bandwidth"));
  CHECK(sp.stat("pod.summary.remote_latency", "mean") >
        2 * rr.stat("pod.summary.remote_latency", "mean"));
}

TEST_CASE(
    "helios-72 (one of its planes) against offered load: bandwidth tracks the load up to the "
    "fabric's knee, where port and switch queueing take over",
    "[validation][fabric][knee]") {
  // helios-72 as shipped, reduced to one of its 18 planes (each plane is the same 72-port
  // switch carrying 1/18 of every GPU's traffic: the same queues at the same load, 18 times
  // fewer accesses to simulate). Every GPU loads 256 B from uniformly random peers at Poisson
  // times for 20 us; the first 2 us are warm-up (cold TLBs, queues filling), left out.
  struct Point {
    double load, latency_ns, bandwidth_gbps, offered_gbps, queueing_ns, utilisation, window_ns;
  };
  std::vector<Point> points;
  for (double load : {0.2, 0.5, 0.8, 0.95}) {
    auto r = run_podsim({"run", source_path("configs/helios-72.json"), "--set", "fabric.planes=1",
                         "--set", "workload.traffic.injection=poisson", "--set",
                         "workload.traffic.read_fraction=1.0", "--set",
                         fmt::format("workload.traffic.offered_load={}", load), "--set",
                         "workload.traffic.duration=20us", "--set", "workload.traffic.warmup=2us",
                         "--set", "workload.setup=direct", "--quiet"});
    INFO("offered load " << load << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    const auto& parts =
        r.stats->at("stats").at("pod.summary.measured.remote_breakdown").at("mean_parts");
    double q = 0;  // time in the ports' transmit queues and the switch, both ways
    for (const char* hop : {"req.port_tx", "req.switch", "resp.port_tx", "resp.switch"})
      q += parts.at(hop).to_number<double>();
    // Offered: every GPU's load responses fill `load` of its port, at the wire's efficiency
    // for a 256 B data packet (computed from the config, not taken from the model).
    const double offered = 72.0 * static_cast<double>(analysis::port_rate(*r.config)) / 8e9 * load *
                           analysis::payload_efficiency(*r.config, 256);
    points.push_back({load, r.stat("pod.summary.measured.remote_latency", "mean"),
                      r.stat("pod.summary.measured.achieved_bandwidth"), offered, q,
                      r.stat("pod.fabric.plane0.switch0.port0.measured_utilisation"),
                      r.stat("pod.summary.measured.window_time")});
  }
  for (const Point& p : points) {
    INFO("offered load " << p.load << ": " << p.bandwidth_gbps << " of " << p.offered_gbps
                         << " GB/s, latency " << p.latency_ns << " ns, queueing " << p.queueing_ns
                         << " ns, switch port 0 busy " << p.utilisation);
    // Below the knee the pod carries what is offered, and a switch port is busy at least that
    // share of the window (the responses), plus the read requests' headers. The window runs
    // from the first measured issue to the last completion, so by its definition the rate
    // over it is the offered one times (window - one latency) / window.
    if (p.load <= 0.8) {
      const double expected = p.offered_gbps * (1 - p.latency_ns / p.window_ns);
      CHECK(p.bandwidth_gbps == Approx(expected).epsilon(0.01));
      CHECK(p.bandwidth_gbps <= p.offered_gbps);
      CHECK(p.utilisation >= p.load);
      CHECK(p.utilisation <= p.load * 1.15);
    }
    CHECK(p.utilisation < 1.0);
  }
  // Flat, then rising: the latency barely moves up to half load, then queueing grows with
  // every step, and at 95% (ports near full with responses and requests) it has taken over.
  CHECK(points[1].latency_ns <= points[0].latency_ns * 1.02);
  for (std::size_t i = 1; i < points.size(); ++i) {
    CHECK(points[i].queueing_ns > points[i - 1].queueing_ns);
    CHECK(points[i].latency_ns >= points[i - 1].latency_ns);
  }
  CHECK(points[3].latency_ns >= 1.3 * points[0].latency_ns);
  CHECK(points[3].queueing_ns - points[0].queueing_ns >= 200.0);
  CHECK(points[3].bandwidth_gbps < 0.97 * points[3].offered_gbps);
}
