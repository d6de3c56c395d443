// Something to put between the two ends of each of a GPU's TLM bindings — in tests, a
// base-protocol checker (tests/support/tlm_checker.hpp) on every socket of a whole pod. For a
// binding it returns a target socket for the initiator to bind to and an initiator socket
// bound to the target; what sits between passes every call through.
#pragma once

#include <string>
#include <tlm>

namespace podsim {

class SocketTap {
 public:
  virtual ~SocketTap() = default;
  struct Ends {
    tlm::tlm_target_socket<>* in;
    tlm::tlm_initiator_socket<>* out;
  };
  // `binding` names it: "<node>.<initiator socket>-><target socket>".
  virtual Ends tap(const std::string& binding) = 0;
};

}  // namespace podsim
