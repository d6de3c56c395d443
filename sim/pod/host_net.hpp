// What GPU processes tell each other outside the fabric, over their hosts' network: a process
// reached a barrier, a handle passed with send_handle, a process's steps are done, a step
// failed, the teardown's "my drivers are idle" answer. Each such note takes effect
// `pod.host_latency` after it was made, on every GPU at once: the barrier releases that long
// after its last arrival, the handle is there that long after it was sent, the pod's control
// learns that the workload has finished that long after its last step.
//
// The delay is part of the model (a barrier between hosts costs microseconds), and it is what
// lets a pod split across ranks (docs/parallel.md) agree on these events exactly: a note made
// on one rank reaches the others at the next window boundary, which is never later than the
// note's effect (ranks' windows are shorter than the host latency). With one rank, notes go
// straight into the pod's event queue; with several, each is also handed to the partition to
// send, and notes from other ranks are queued as they arrive. Either way a note is applied
// at the same time, in an order that depends only on the note (kind, origin, sequence).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/byte_io.hpp"
#include "sim/core/units.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

struct HostNote {
  // HandleLost: a handle that will not come (the step sending it failed; on_failure continue).
  enum class Kind : std::uint8_t { Barrier, Handle, GroupDone, Failure, Idle, HandleLost };
  Kind kind = Kind::Barrier;
  std::uint32_t origin = 0;    // who made it: a GPU, or for Idle a rank
  std::uint32_t index = 0;     // Barrier: the barrier; Handle: the receiving GPU; Idle: the round
  std::uint64_t seq = 0;       // the origin's count of notes: with kind and origin, the order
  Time at;                     // when it was made
  std::uint64_t a = 0, b = 0;  // Handle: the handle; Idle: 1 if idle
  std::string text;            // Handle: the name it is known by; Failure: what failed

  // The tie-break between notes applied at the same time.
  std::uint64_t order() const {
    return static_cast<std::uint64_t>(kind) << 60 | static_cast<std::uint64_t>(origin) << 40 |
           (seq & ((1ull << 40) - 1));
  }
};

// Notes as bytes (for the partition's messages).
void pack_note(const HostNote& n, ByteWriter& out);
HostNote unpack_note(ByteReader& in);

class HostNet {
 public:
  // `apply` is called for each note when it takes effect (`latency` after it was made).
  HostNet(Dispatcher& events, std::string name, Time latency,
          std::function<void(const HostNote&)> apply);

  Time latency() const { return latency_; }
  // A note made now by `origin` (its `at` and `seq` are filled in here).
  void publish(HostNote n);
  // Partitioned runs: notes made here are also kept for the other ranks.
  void share() { shared_ = true; }
  std::vector<HostNote> take_outgoing() { return std::exchange(outgoing_, {}); }
  // A note another rank made: applied at its time plus the latency.
  void receive(const HostNote& n);

 private:
  Time latency_;
  std::function<void(const HostNote&)> apply_;
  TimedQueue<HostNote> queue_;
  std::vector<std::uint64_t> seqs_;  // by origin (and Idle notes: by kind)
  bool shared_ = false;
  std::vector<HostNote> outgoing_;
};

}  // namespace podsim
