// A TLM-2.0 initiator for component testbenches inside a GPU (the NPA MMU, VRAM, GpuVm):
// stands where a port or the compute agent would, sends accesses at chosen simulated times
// under the base protocol (through a RequestLane: it waits for END_REQ where a target asks it
// to, takes answers given on the return path), and records every answer with its time. With
// `end_resp_after` set it ends each response that much later (TLM_ACCEPTED, then END_RESP),
// as a slow initiator may. Bind `out` to the target (or to a BaseProtocolChecker in front).
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "sim/kernel/base_protocol.hpp"
#include "tests/support/fabric_probe.hpp"
#include "tests/support/tlm_checker.hpp"

namespace podsim::test {

struct TlmRequester : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<TlmRequester> out{"out"};
  PacketMaker packets;
  struct Answer {
    Time at;
    AccessStatus status;
    std::array<unsigned char, 64> data;
  };
  std::map<std::uint64_t, Answer> answers;              // by access id
  std::vector<std::pair<Time, Time>> response_windows;  // BEGIN_RESP .. END_RESP (slow mode)
  Time end_resp_after;
  AccelId src = 3;  // the requester's accelerator ID the accesses carry

  TlmRequester(sc_core::sc_module_name n, Dispatcher& events)
      : sc_module(n),
        sends_(events, queue_name(*this, "sends"),
               [this](auto* gp) { lane_.send(*gp, sc_core::SC_ZERO_TIME); }),
        end_resps_(events, queue_name(*this, "end_resps"), [this](auto* gp) {
          tlm::tlm_phase ph = tlm::END_RESP;
          sc_core::sc_time d = sc_core::SC_ZERO_TIME;
          response_windows.back().second = sim_now();
          REQUIRE(out->nb_transport_fw(*gp, ph, d) == tlm::TLM_COMPLETED);
          gp->release();
        }) {
    out.register_nb_transport_bw(this, &TlmRequester::bw);
  }

  // An access of `op` and `size` bytes to `addr` (a VRAM byte address, an NPA or a virtual
  // address: it is the payload's address and the Access's pa, npa and vaddr), sent at `t`.
  // Stores and atomics carry `value` in every 8-byte lane; a load's buffer starts as 0xAA
  // bytes, so zeros read back are memory's. Returns the access ID.
  std::uint64_t send(Time t, AccessOp op, std::uint64_t addr, std::uint32_t size = 64,
                     std::uint64_t value = 0, bool posted = false) {
    auto& gp = packets.make(PacketKind::Request, op, size);
    Access& a = access_of(gp);
    a.src = src;
    a.pa = a.npa = a.vaddr = addr;
    a.posted = posted;
    gp.set_address(addr);
    gp.set_command(op == AccessOp::Read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    gp.set_data_length(size);
    if (op == AccessOp::Read) std::memset(gp.get_data_ptr(), 0xAA, size);
    for (std::uint32_t off = 0; op != AccessOp::Read && off + 8 <= size; off += 8)
      std::memcpy(gp.get_data_ptr() + off, &value, 8);
    sends_.push(t, &gp, a.id);
    return a.id;
  }
  // The first 8-byte lane of an answer's data.
  std::uint64_t lane(std::uint64_t id) const {
    std::uint64_t x;
    std::memcpy(&x, answers.at(id).data.data(), 8);
    return x;
  }
  // Payloads still out (every reference given back once all is answered).
  std::size_t in_use() const { return packets.pool.in_use(); }

 private:
  void take(tlm::tlm_generic_payload& gp, Time at) {
    Answer a{at, access_of(gp).status, {}};
    std::memcpy(a.data.data(), gp.get_data_ptr(), 64);
    answers[access_of(gp).id] = a;
  }
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d) {
    if (ph == tlm::END_REQ) return lane_.end_request(gp);
    REQUIRE(ph == tlm::BEGIN_RESP);
    lane_.begin_response(gp);
    REQUIRE_FALSE(access_of(gp).posted);  // podsim answers no posted store
    const Time at = sim_now() + from_sc(d);
    take(gp, at);
    if (end_resp_after > Time{}) {
      response_windows.push_back({at, Time{}});
      end_resps_.push(at + end_resp_after, &gp, access_of(gp).id);
      return tlm::TLM_ACCEPTED;
    }
    gp.release();
    return tlm::TLM_COMPLETED;
  }

  RequestLane lane_{[this] { return out.operator->(); },
                    [this](tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) {
                      take(gp, sim_now() + from_sc(d));
                      gp.release();
                    }};
  TimedQueue<tlm::tlm_generic_payload*> sends_, end_resps_;
};

// A checker saw no breach of the base protocol, and every transaction it saw begin ended.
inline void check_clean(const BaseProtocolChecker& c) {
  INFO(c.name());
  for (const auto& v : c.violations())
    UNSCOPED_INFO(v);
  CHECK(c.violations().empty());
  CHECK(c.open() == 0);
  CHECK(c.begun() == c.completed());
}

}  // namespace podsim::test
