#include "fabric/link.hpp"

#include <stdexcept>
#include <string>

namespace podsim {

Link::Link(sc_core::sc_module_name name, const LinkConfig& cfg, Time credit_processing)
    : sc_module(name),
      flight_(cfg.flight_time()),
      credit_delay_(cfg.flight_time() + credit_processing) {}

void Link::attach(Side side, LinkEnd& end, std::uint32_t port) {
  if (ends_[side].end) throw std::logic_error(std::string(this->name()) + ": end attached twice");
  ends_[side] = End{&end, port};
}

void Link::end_of_elaboration() {
  // An end another rank simulates may not be built here (what would reach it goes to its rank).
  for (Side side : {A, B})
    if (!ends_[side].end && !remote_[side])
      throw std::logic_error(std::string(name()) + ": a link end is not attached");
}

}  // namespace podsim
