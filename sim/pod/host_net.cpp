#include "sim/pod/host_net.hpp"

#include <cstring>
#include <stdexcept>

namespace podsim {

namespace {
template <class T>
void put(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}
template <class T>
const unsigned char* get(const unsigned char* in, const unsigned char* end, T& v) {
  if (end - in < static_cast<std::ptrdiff_t>(sizeof v))
    throw std::runtime_error("host note: message cut short");
  std::memcpy(&v, in, sizeof v);
  return in + sizeof v;
}
}  // namespace

void pack_note(const HostNote& n, std::vector<unsigned char>& out) {
  put(out, static_cast<std::uint8_t>(n.kind));
  put(out, n.origin);
  put(out, n.index);
  put(out, n.seq);
  put(out, n.at.as_ps());
  put(out, n.a);
  put(out, n.b);
  put(out, static_cast<std::uint32_t>(n.text.size()));
  out.insert(out.end(), n.text.begin(), n.text.end());
}

const unsigned char* unpack_note(const unsigned char* in, const unsigned char* end, HostNote& n) {
  std::uint8_t kind = 0;
  std::int64_t at = 0;
  std::uint32_t len = 0;
  in = get(in, end, kind);
  if (kind > static_cast<std::uint8_t>(HostNote::Kind::Idle))
    throw std::runtime_error("host note: unknown kind");
  n.kind = static_cast<HostNote::Kind>(kind);
  in = get(in, end, n.origin);
  in = get(in, end, n.index);
  in = get(in, end, n.seq);
  in = get(in, end, at);
  n.at = Time::ps(at);
  in = get(in, end, n.a);
  in = get(in, end, n.b);
  in = get(in, end, len);
  if (end - in < static_cast<std::ptrdiff_t>(len))
    throw std::runtime_error("host note: message cut short");
  n.text.assign(reinterpret_cast<const char*>(in), len);
  return in + len;
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
