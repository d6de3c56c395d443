#include "sim/pod/host_net.hpp"

#include <stdexcept>

namespace podsim {

void pack_note(const HostNote& n, ByteWriter& out) {
  out.put(static_cast<std::uint8_t>(n.kind));
  out.put(n.origin);
  out.put(n.index);
  out.put(n.seq);
  out.put(n.at.as_ps());
  out.put(n.a);
  out.put(n.b);
  out.str(n.text);
}

HostNote unpack_note(ByteReader& in) {
  HostNote n;
  const auto kind = in.get<std::uint8_t>();
  if (kind > static_cast<std::uint8_t>(HostNote::Kind::HandleLost))
    throw std::runtime_error("host note: unknown kind");
  n.kind = static_cast<HostNote::Kind>(kind);
  n.origin = in.get<std::uint32_t>();
  n.index = in.get<std::uint32_t>();
  n.seq = in.get<std::uint64_t>();
  n.at = Time::ps(in.get<std::int64_t>());
  n.a = in.get<std::uint64_t>();
  n.b = in.get<std::uint64_t>();
  n.text = in.str();
  return n;
}

HostNet::HostNet(Dispatcher& events, std::string name, Time latency,
                 std::function<void(const HostNote&)> apply)
    : latency_(latency),
      apply_(std::move(apply)),
      queue_(events, std::move(name), [this](HostNote& n) { apply_(n); }) {}

void HostNet::publish(HostNote n) {
  // Idle notes come from ranks, the others from GPUs: separate counts.
  const std::size_t slot =
      n.kind == HostNote::Kind::Idle ? 0 : static_cast<std::size_t>(n.origin) + 1;
  if (seqs_.size() <= slot) seqs_.resize(slot + 1, 0);
  n.seq = seqs_[slot]++;
  n.at = sim_now();
  if (shared_) outgoing_.push_back(n);
  const std::uint64_t key = n.order();
  const Time due = n.at + latency_;
  queue_.push(due, std::move(n), key);
}

void HostNet::receive(const HostNote& n) {
  if (n.at + latency_ <= sim_now())
    throw std::logic_error("host note from another rank arrived after it was due");
  queue_.push(n.at + latency_, n, n.order());
}

}  // namespace podsim
