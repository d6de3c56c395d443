// Testbench: one UalinkPort between a stand-in for its GPU (GpuVm's and the NPA MMU's sockets)
// and a probe at the far end of its link. Expected times from the port's config (transmit
// latency: pipeline and SerDes; receive latency: SerDes, FEC and pipeline; wire time of a
// packet's TL bytes) and 10 ns of cable.
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <catch2/catch.hpp>
#include <vector>

#include "fabric/link.hpp"
#include "fabric/ualink_port.hpp"
#include "tests/support/fabric_probe.hpp"
#include "tests/support/tlm_probe.hpp"

using namespace podsim;
using podsim::test::Injector;
using podsim::test::PacketMaker;
using podsim::test::ProbeEnd;

namespace {

constexpr Time kFlight = Time::ns(10);  // the default cable: 2 m at 5 ns per metre
constexpr AccelId kSelf = 3;

// GpuVm's side (sends requests, takes responses) and the NPA MMU's (takes requests from the
// fabric, answers after `answer_after`).
struct Gpu : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Gpu> to_port{"to_port"};
  tlm_utils::simple_target_socket<Gpu> from_port{"from_port"};
  struct Seen {
    std::uint64_t id;
    Time at;
    PacketKind kind;
  };
  std::vector<Seen> responses, requests;
  Time answer_after = Time::ns(100);
  explicit Gpu(sc_core::sc_module_name n) : sc_module(n) {
    to_port.register_nb_transport_bw(this, &Gpu::response);
    from_port.register_nb_transport_fw(this, &Gpu::request);
  }
  void send(tlm::tlm_generic_payload& gp) {
    tlm::tlm_phase ph = tlm::BEGIN_REQ;
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    to_port->nb_transport_fw(gp, ph, d);
  }
  tlm::tlm_sync_enum response(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time& d) {
    responses.push_back({access_of(gp).id, sim_now() + from_sc(d), access_of(gp).kind});
    return tlm::TLM_COMPLETED;
  }
  tlm::tlm_sync_enum request(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                             sc_core::sc_time& d) {
    if (ph == tlm::END_RESP) return tlm::TLM_COMPLETED;
    requests.push_back({access_of(gp).id, sim_now() + from_sc(d), access_of(gp).kind});
    // Memory answers on the return path, `answer_after` later (the port turns it into a
    // response packet).
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    ph = tlm::BEGIN_RESP;
    d += to_sc(answer_after);
    return tlm::TLM_UPDATED;
  }
};

struct Bench {
  Dispatcher events{"events"};
  PortConfig cfg;
  LinkConfig link_cfg;
  UalinkPort port{"port0", cfg, link_cfg, events, 1};
  Link link{"link", link_cfg};
  Gpu gpu{"gpu"};
  ProbeEnd far;
  PacketMaker packets;
  Injector from_gpu{events, [this](tlm::tlm_generic_payload& gp) { gpu.send(gp); }, "tb.gpu"};
  // Packets the far end sends: their heads leave it at the injection time.
  Injector from_far{events,
                    [this](tlm::tlm_generic_payload& gp) { link.send(Link::B, gp, sim_now()); },
                    "tb.far"};
  // The base protocol on the port's GPU-side sockets.
  test::BaseProtocolChecker to_port{"to_port"}, from_port{"from_port"};
  Bench() {
    gpu.to_port.bind(to_port.in);
    to_port.out.bind(port.from_gpuvm);
    port.to_npa_mmu.bind(from_port.in);
    from_port.out.bind(gpu.from_port);
    port.connect(link, Link::A);
    link.attach(Link::B, far, 0);
  }
  Time wire(std::uint64_t payload) const {
    return port.egress().costs().wire_time(port.egress().costs().tl_bytes(payload));
  }
  // The far end answers each request it receives: the same packet back as a response, its
  // head leaving the far end at `t`.
  void answer_from_far_at(Time t) {
    far.on_receive = [this, t](std::uint32_t, tlm::tlm_generic_payload& gp, Time) {
      Access& a = access_of(gp);
      a.kind = PacketKind::Response;
      a.route_to = a.src;
      gp.set_response_status(tlm::TLM_OK_RESPONSE);
      from_far.at(t, gp);
    };
  }
  ~Bench() {
    test::check_clean(to_port);
    test::check_clean(from_port);
  }
  tlm::tlm_generic_payload& packet(PacketKind kind, AccessOp op, AccelId src, AccelId dst,
                                   AccelId route_to) {
    auto& gp = packets.make(kind, op, 64, route_to);
    access_of(gp).src = src;
    access_of(gp).dst = dst;
    return gp;
  }
};

}  // namespace

TEST_CASE(
    "a request from GpuVm leaves after the port's pipeline and SerDes, and its head reaches the "
    "far end one flight later",
    "[fabric][port]") {
  Bench b;
  REQUIRE(b.link.flight_time() == kFlight);
  const Time t0 = Time::ns(100);
  b.from_gpu.at(t0, b.packet(PacketKind::Request, AccessOp::Read, kSelf, 5, 5));
  b.answer_from_far_at(Time::us(2));  // so the transaction ends (checked by the bench)
  b.events.run_for(Time::us(3));
  REQUIRE(b.far.arrivals.size() == 1);
  CHECK(b.far.arrivals[0].head == t0 + b.cfg.tx_latency() + kFlight);
  CHECK(b.far.arrivals[0].tc == TrafficClass::Request);
  CHECK(b.gpu.responses.size() == 1);
}

TEST_CASE(
    "a request from the fabric reaches the NPA MMU once whole and through SerDes, FEC and the "
    "pipeline, its credits go back then, and memory's answer leaves as a response to its source",
    "[fabric][port]") {
  Bench b;
  const Time t0 = Time::ns(100);
  auto& request = b.packet(PacketKind::Request, AccessOp::Read, 5, kSelf, kSelf);
  b.from_far.at(t0, request);
  b.events.run_for(Time::us(1));

  const Time head = t0 + kFlight;
  const Time ready = head + b.wire(0) + b.cfg.rx_latency();  // a load's request carries no data
  REQUIRE(b.gpu.requests.size() == 1);
  CHECK(b.gpu.requests[0].at == ready);
  REQUIRE(b.far.credits_in.size() == 1);
  CHECK(b.far.credits_in[0].at == ready + kFlight);
  CHECK(b.far.credits_in[0].tc == TrafficClass::Request);
  // The answer: a response packet carrying the 64 bytes, to GPU 5.
  REQUIRE(b.far.arrivals.size() == 1);
  CHECK(b.far.arrivals[0].tc == TrafficClass::Response);
  CHECK(b.far.arrivals[0].head == ready + b.gpu.answer_after + b.cfg.tx_latency() + kFlight);
  CHECK(access_of(request).kind == PacketKind::Response);
  CHECK(access_of(request).route_to == 5);
}

TEST_CASE("a response from the fabric goes back to GpuVm on its backward path", "[fabric][port]") {
  Bench b;
  auto& request = b.packet(PacketKind::Request, AccessOp::Read, kSelf, 5, 5);
  b.from_gpu.at(Time::ns(10), request);
  const Time t0 = Time::us(1);  // the far end answers then
  b.answer_from_far_at(t0);
  b.events.run_for(Time::us(2));
  REQUIRE(b.gpu.responses.size() == 1);
  CHECK(b.gpu.responses[0].id == access_of(request).id);
  CHECK(b.gpu.responses[0].at == t0 + kFlight + b.wire(64) + b.cfg.rx_latency());
  CHECK(b.gpu.requests.empty());
}

TEST_CASE(
    "a port that is down answers a request from the fabric with an error and drops a response",
    "[fabric][port][reset]") {
  Bench b;
  b.port.set_down(true);
  const Time t0 = Time::ns(100);
  auto& request = b.packet(PacketKind::Request, AccessOp::Read, 5, kSelf, kSelf);
  b.from_far.at(t0, request);
  b.from_far.at(t0, b.packet(PacketKind::Response, AccessOp::Read, kSelf, 5, kSelf));
  b.events.run_for(Time::us(1));
  CHECK(b.gpu.requests.empty());
  CHECK(b.gpu.responses.empty());
  REQUIRE(b.far.arrivals.size() == 1);  // the request, answered
  CHECK(b.far.arrivals[0].id == access_of(request).id);
  CHECK(b.far.arrivals[0].tc == TrafficClass::Response);
  CHECK(access_of(request).status == AccessStatus::Unreachable);
}
