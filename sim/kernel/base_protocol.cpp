#include "sim/kernel/base_protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace podsim {

namespace {
const char* sync_name(tlm::tlm_sync_enum r) {
  switch (r) {
    case tlm::TLM_ACCEPTED: return "TLM_ACCEPTED";
    case tlm::TLM_UPDATED: return "TLM_UPDATED";
    case tlm::TLM_COMPLETED: return "TLM_COMPLETED";
  }
  return "?";
}

[[noreturn]] void protocol_error(const std::string& what) {
  SC_REPORT_ERROR("podsim/tlm", what.c_str());
  throw std::logic_error(what);  // reached only if SystemC is told not to throw
}
}  // namespace

void phase_error(const char* where, const tlm::tlm_phase& ph) {
  protocol_error(fmt::format("{}: phase {} is not allowed here by the TLM-2.0 base protocol", where,
                             ph.get_name()));
}

void RequestLane::returned(tlm::tlm_generic_payload& gp, tlm::tlm_sync_enum r, tlm::tlm_phase ph,
                           const sc_core::sc_time& delay) {
  const bool answers = !unanswered(access_of(gp));
  switch (r) {
    case tlm::TLM_ACCEPTED:  // the target will send END_REQ or BEGIN_RESP
      open_ = &gp;
      return;
    case tlm::TLM_COMPLETED:  // answered (or, unanswered, taken) on the return path
      if (answers)
        answered_(gp, delay);
      else
        gp.release();
      break;
    case tlm::TLM_UPDATED:
      if (ph != tlm::BEGIN_RESP)
        protocol_error(
            fmt::format("target answered BEGIN_REQ with TLM_UPDATED and phase {}", ph.get_name()));
      {
        // A response on the return path: the initiator ends it with END_RESP.
        tlm::tlm_phase end = tlm::END_RESP;
        sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
        const auto e = peer_->nb_transport_fw(gp, end, zero);
        if (e != tlm::TLM_COMPLETED)
          protocol_error(fmt::format("target answered END_RESP with {}", sync_name(e)));
      }
      if (answers)
        answered_(gp, delay);
      else
        gp.release();
      break;
  }
}

tlm::tlm_sync_enum RequestLane::end_request(tlm::tlm_generic_payload& gp) {
  if (open_ != &gp)
    protocol_error(
        fmt::format("END_REQ for access {} whose request phase is not open", access_of(gp).id));
  reopen();
  return tlm::TLM_ACCEPTED;
}

// The open request ended: send what waited behind it.
void RequestLane::reopen() {
  drain([this](tlm::tlm_generic_payload& gp, sc_core::sc_time d) { issue(gp, d); });
}

void ResponseLane::returned(tlm::tlm_generic_payload& gp, tlm::tlm_sync_enum r, tlm::tlm_phase ph) {
  if (r == tlm::TLM_ACCEPTED) {  // the initiator will send END_RESP
    open_ = &gp;
    return;
  }
  if (r == tlm::TLM_UPDATED && ph == tlm::END_RESP) return;
  protocol_error(fmt::format("initiator answered BEGIN_RESP with {} and phase {}", sync_name(r),
                             ph.get_name()));
}

tlm::tlm_sync_enum ResponseLane::end_response(tlm::tlm_generic_payload& gp) {
  if (open_ != &gp)
    protocol_error(
        fmt::format("END_RESP for access {} whose response phase is not open", access_of(gp).id));
  drain([this](tlm::tlm_generic_payload& g, sc_core::sc_time d) { issue(g, d); });
  return tlm::TLM_COMPLETED;
}

}  // namespace podsim
