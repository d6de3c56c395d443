// Component testbenches of the fabric: link ends that stand where a port or a switch would,
// packets made to order, and packets injected at chosen times. A testbench wires the
// component under test to these through Links, runs the pod's event queue, and asserts on
// what reached each end and when.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/egress.hpp"
#include "fabric/link_end.hpp"
#include "fabric/traffic.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim::test {

// A link end that records every packet and credit return reaching it; `on_receive` (optional)
// acts on a packet as a receiver would (return credits, answer).
struct ProbeEnd : LinkEnd {
  struct Arrival {
    std::uint64_t id;
    std::uint32_t port;
    Time head;
    TrafficClass tc;
  };
  struct CreditIn {
    std::uint32_t port;
    TrafficClass tc;
    std::uint64_t tl;
    Time at;
  };
  std::vector<Arrival> arrivals;
  std::vector<CreditIn> credits_in;
  std::function<void(std::uint32_t port, tlm::tlm_generic_payload&, Time head)> on_receive;

  void receive(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head) override {
    arrivals.push_back({access_of(gp).id, port, head, traffic_class(access_of(gp))});
    if (on_receive) on_receive(port, gp, head);
  }
  void credits(std::uint32_t port, TrafficClass tc, std::uint64_t tl, Time at) override {
    credits_in.push_back({port, tc, tl, at});
  }
  std::vector<std::uint64_t> ids() const {
    std::vector<std::uint64_t> v;
    for (const auto& a : arrivals)
      v.push_back(a.id);
    return v;
  }
};

// The sending end of a link driven by an Egress: credits reaching it go to the egress.
struct EgressEnd : LinkEnd {
  explicit EgressEnd(Egress& e) : egress(e) {}
  Egress& egress;
  ProbeEnd seen;  // what reaches it (packets, credits), for assertions
  void receive(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head) override {
    seen.receive(port, gp, head);
  }
  void credits(std::uint32_t port, TrafficClass tc, std::uint64_t tl, Time at) override {
    seen.credits(port, tc, tl, at);
    egress.return_credits(tc, tl, at);
  }
};

// Packets made to order, from a pool, with consecutive access IDs from 0.
struct PacketMaker {
  PacketPool pool;
  std::uint64_t next_id = 0;
  tlm::tlm_generic_payload& make(PacketKind kind, AccessOp op, std::uint32_t size,
                                 AccelId route_to = 1) {
    auto& gp = pool.acquire();
    Access& a = access_of(gp);
    a.id = next_id++;
    a.kind = kind;
    a.op = op;
    a.size = size;
    a.src = 0;
    a.dst = route_to;
    a.route_to = route_to;
    return gp;
  }
};

// Hands packets to `deliver` at chosen simulated times (same-time ones in access-ID order).
class Injector {
 public:
  Injector(Dispatcher& events, std::function<void(tlm::tlm_generic_payload&)> deliver,
           std::string name = "testbench.inject")
      : queue_(events, std::move(name), [this](tlm::tlm_generic_payload* gp) { deliver_(*gp); }),
        deliver_(std::move(deliver)) {}
  void at(Time t, tlm::tlm_generic_payload& gp) { queue_.push(t, &gp, access_of(gp).id); }

 private:
  TimedQueue<tlm::tlm_generic_payload*> queue_;
  std::function<void(tlm::tlm_generic_payload&)> deliver_;
};

}  // namespace podsim::test
