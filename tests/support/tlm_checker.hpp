// A TLM-2.0 base-protocol checker for testbenches: bound between an initiator and a target
// (initiator -> checker.in, checker.out -> target), it passes every call through unchanged and
// records each breach of the base protocol's rules (IEEE 1666-2011, clause 15) it sees on that
// hop:
// - phases in their order: BEGIN_REQ, then END_REQ (or an implicit one: BEGIN_RESP or
//   completion), then BEGIN_RESP, then END_RESP (or completion); each phase on its own path
//   (requests and END_RESP forward, END_REQ and BEGIN_RESP backward); the return values and
//   phases each call may give back;
// - the request exclusion rule (no BEGIN_REQ while another request on the hop awaits its
//   END_REQ) and the response exclusion rule (no BEGIN_RESP while another response awaits
//   its END_RESP);
// - the payload: a memory manager and a reference held throughout (nb_transport), response
//   status TLM_INCOMPLETE_RESPONSE at BEGIN_REQ and set by the time of a response or
//   completion, a data pointer where there is data, a streaming width other than 0, byte
//   enables with a length, command and data length unchanged by the target, the same payload
//   never in two transactions on the hop at once.
// Debian's SystemC ships no protocol checker, so the tests carry this one.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace podsim::test {

class BaseProtocolChecker : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<BaseProtocolChecker> in{"in"};
  tlm_utils::simple_initiator_socket<BaseProtocolChecker> out{"out"};

  explicit BaseProtocolChecker(sc_core::sc_module_name n) : sc_module(n) {
    in.register_nb_transport_fw(this, &BaseProtocolChecker::fw);
    out.register_nb_transport_bw(this, &BaseProtocolChecker::bw);
  }

  // Every breach seen, in order, each naming the rule.
  const std::vector<std::string>& violations() const { return violations_; }
  // Transactions begun on this hop, and those not yet complete.
  std::uint64_t begun() const { return begun_; }
  std::uint64_t completed() const { return completed_; }
  std::size_t open() const { return open_.size(); }
  // Requests that had to wait for END_REQ (the target returned TLM_ACCEPTED to BEGIN_REQ).
  std::uint64_t accepted_requests() const { return accepted_requests_; }

 private:
  enum class State { Req, ReqEnded, Resp };
  struct Open {
    State state;
    tlm::tlm_command command;
    unsigned length;
  };
  using Gp = tlm::tlm_generic_payload;

  void breach(const Gp& gp, const std::string& rule) {
    violations_.push_back(fmt::format("{} at {}: payload {}: {}", name(),
                                      sc_core::sc_time_stamp().to_string(),
                                      static_cast<const void*>(&gp), rule));
  }
  void check_held(Gp& gp, const char* call) {
    if (!gp.has_mm())
      breach(gp, fmt::format("{} with a payload that has no memory manager", call));
    else if (gp.get_ref_count() <= 0)
      breach(gp, fmt::format("{} with a payload nobody holds a reference to", call));
  }
  void check_unchanged(Gp& gp, const Open& o, const char* when) {
    if (gp.get_command() != o.command || gp.get_data_length() != o.length)
      breach(gp, fmt::format("command or data length changed before {}", when));
  }
  void check_status_set(Gp& gp, const char* when) {
    if (gp.get_response_status() == tlm::TLM_INCOMPLETE_RESPONSE)
      breach(gp, fmt::format("response status still TLM_INCOMPLETE_RESPONSE at {}", when));
  }
  void finish(Gp& gp) {
    if (resp_in_progress_ == &gp) resp_in_progress_ = nullptr;
    if (req_in_progress_ == &gp) req_in_progress_ = nullptr;
    open_.erase(&gp);
    ++completed_;
  }
  void begin_response(Gp& gp, Open& o) {
    if (resp_in_progress_ && resp_in_progress_ != &gp)
      breach(gp, "BEGIN_RESP while another response awaits END_RESP (response exclusion rule)");
    check_status_set(gp, "BEGIN_RESP");
    check_unchanged(gp, o, "BEGIN_RESP");
    if (req_in_progress_ == &gp) req_in_progress_ = nullptr;  // implicit END_REQ
    o.state = State::Resp;
    resp_in_progress_ = &gp;
  }

  tlm::tlm_sync_enum fw(Gp& gp, tlm::tlm_phase& ph, sc_core::sc_time& d) {
    check_held(gp, "nb_transport_fw");
    const tlm::tlm_phase sent = ph;
    auto it = open_.find(&gp);
    if (sent == tlm::BEGIN_REQ) {
      if (it != open_.end()) breach(gp, "BEGIN_REQ for a payload already in a transaction here");
      if (req_in_progress_)
        breach(gp, "BEGIN_REQ while another request awaits END_REQ (request exclusion rule)");
      if (gp.get_response_status() != tlm::TLM_INCOMPLETE_RESPONSE)
        breach(gp, "BEGIN_REQ with a response status other than TLM_INCOMPLETE_RESPONSE");
      if (gp.get_data_length() > 0 && !gp.get_data_ptr())
        breach(gp, "BEGIN_REQ with data length but no data pointer");
      if (gp.get_streaming_width() == 0) breach(gp, "BEGIN_REQ with a streaming width of 0");
      if (gp.get_byte_enable_ptr() && gp.get_byte_enable_length() == 0)
        breach(gp, "BEGIN_REQ with byte enables of length 0");
      it = open_.emplace(&gp, Open{State::Req, gp.get_command(), gp.get_data_length()}).first;
      ++begun_;
    } else if (sent == tlm::END_RESP) {
      // The response ends with the call: the target may begin the next one inside it.
      if (it == open_.end() || it->second.state != State::Resp)
        breach(gp, "END_RESP without a response in progress");
      else
        finish(gp);
      it = open_.end();
      const tlm::tlm_sync_enum r = out->nb_transport_fw(gp, ph, d);
      if (r != tlm::TLM_COMPLETED) breach(gp, "END_RESP not answered with TLM_COMPLETED");
      return r;
    } else {
      breach(gp, fmt::format("{} sent on the forward path", sent.get_name()));
    }

    const tlm::tlm_sync_enum r = out->nb_transport_fw(gp, ph, d);

    if (sent != tlm::BEGIN_REQ) return r;
    it = open_.find(&gp);  // again: calls made inside this one may have changed the table
    if (it == open_.end()) return r;
    Open& o = it->second;
    switch (r) {
      case tlm::TLM_ACCEPTED:
        if (ph != tlm::BEGIN_REQ) breach(gp, "TLM_ACCEPTED with the phase changed");
        req_in_progress_ = &gp;
        ++accepted_requests_;
        break;
      case tlm::TLM_UPDATED:
        if (ph == tlm::END_REQ) {
          o.state = State::ReqEnded;
        } else if (ph == tlm::BEGIN_RESP) {
          begin_response(gp, o);
        } else {
          breach(gp, fmt::format("BEGIN_REQ answered with TLM_UPDATED and {}", ph.get_name()));
        }
        break;
      case tlm::TLM_COMPLETED:
        check_status_set(gp, "completion");
        check_unchanged(gp, o, "completion");
        finish(gp);
        break;
    }
    return r;
  }

  tlm::tlm_sync_enum bw(Gp& gp, tlm::tlm_phase& ph, sc_core::sc_time& d) {
    check_held(gp, "nb_transport_bw");
    const tlm::tlm_phase sent = ph;
    auto it = open_.find(&gp);
    if (it == open_.end()) {
      breach(gp, fmt::format("{} on the backward path for no open transaction", sent.get_name()));
      return in->nb_transport_bw(gp, ph, d);
    }
    Open& o = it->second;
    if (sent == tlm::END_REQ) {
      if (o.state != State::Req) breach(gp, "END_REQ for a request not awaiting it");
      o.state = State::ReqEnded;
      if (req_in_progress_ == &gp) req_in_progress_ = nullptr;
    } else if (sent == tlm::BEGIN_RESP) {
      if (o.state == State::Resp) breach(gp, "BEGIN_RESP twice");
      begin_response(gp, o);
    } else {
      breach(gp, fmt::format("{} sent on the backward path", sent.get_name()));
    }

    const tlm::tlm_sync_enum r = in->nb_transport_bw(gp, ph, d);

    if (sent == tlm::END_REQ) {
      if (r != tlm::TLM_ACCEPTED) breach(gp, "END_REQ not answered with TLM_ACCEPTED");
    } else if (sent == tlm::BEGIN_RESP) {
      if (r == tlm::TLM_COMPLETED || (r == tlm::TLM_UPDATED && ph == tlm::END_RESP))
        finish(gp);
      else if (r == tlm::TLM_UPDATED)
        breach(gp, fmt::format("BEGIN_RESP answered with TLM_UPDATED and {}", ph.get_name()));
      else if (ph != tlm::BEGIN_RESP)
        breach(gp, "TLM_ACCEPTED with the phase changed");
    }
    return r;
  }

  std::unordered_map<const Gp*, Open> open_;
  const Gp* req_in_progress_ = nullptr;
  const Gp* resp_in_progress_ = nullptr;
  std::vector<std::string> violations_;
  std::uint64_t begun_ = 0, completed_ = 0, accepted_requests_ = 0;
};

}  // namespace podsim::test
