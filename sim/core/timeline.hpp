// A timeline of a run in the Chrome/Perfetto trace-event JSON format (open it at
// ui.perfetto.dev or chrome://tracing). One process per GPU; on it:
//   - "driver": export, import and revoke calls, and every message handled (always);
//   - "messages sent": each control message from the write to its write-back (always), with a
//     flow arrow from its sending to its handling by the receiving GPU's driver (matched in
//     order per sender, receiver and message type: a ring delivers in order);
//   - "process N": the scenario steps of process N (always);
//   - "accesses (sampled)": one access in every `sample_every`, as a slice with one child per
//     hop, until `max_access_events` events have been written (then the rest are counted).
// And one process per fabric plane ("plane P"), with tracks "switches" and "links": a sampled
// access's switch and link hops also appear there, where they happen (named by the access's
// GPUs and direction; a leaf/spine plane's switches share the one track).
// Plain C++: the models call it; nothing is written until the run ends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/units.hpp"

namespace podsim {

class Timeline {
 public:
  struct Options {
    std::uint64_t sample_every = 100;          // per GPU: the 1st, (n+1)th, ... access
    std::uint64_t max_access_events = 200000;  // events for sampled accesses, at most
  };
  enum Track : std::uint32_t {
    Driver = 1,
    MessagesSent = 2,
    Accesses = 3,
    Collective = 4,
    Process = 100
  };

  explicit Timeline(Options o) : opt_(o) {}

  // Control: always kept. `args` is a JSON object's text ("" for none).
  void span(std::uint32_t gpu, std::uint32_t track, std::string name, Time start, Time end,
            std::string args = {});
  // An interval that may overlap others on its track (async slices).
  void async_span(std::uint32_t gpu, std::uint32_t track, std::string name, Time start, Time end,
                  std::string args = {});
  void instant(std::uint32_t gpu, std::uint32_t track, std::string name, Time at,
               std::string args = {});
  // A control message `what` sent by `gpu` to `to` from `start` until its write-back at `end`
  // (on "messages sent"), and one handled by `gpu`'s driver at `at` (on "driver"): each
  // handling is joined by a flow arrow to the earliest send of the same type from its sender
  // to it not yet joined that began no later.
  void message_sent(std::uint32_t gpu, std::uint32_t to, std::string what, Time start, Time end,
                    std::string args = {});
  void message_handled(std::uint32_t gpu, std::uint32_t from, std::string what, Time at,
                       std::string args = {});

  // Data: should this GPU's next completed access be recorded? (Counts every call.)
  bool sample(std::uint32_t gpu);
  struct Hop {
    std::string_view name;
    Time start, end;
    // A switch or link hop: the plane it crossed, and whether it is a switch (else a link).
    std::int32_t plane = -1;
    bool is_switch = false;
  };
  enum FabricTrack : std::uint32_t { Switches = 1, Links = 2 };
  // A sampled access and its hops; dropped (and counted) once the bound is reached.
  void access(std::uint32_t gpu, std::string name, Time start, Time end,
              const std::vector<Hop>& hops, std::string args = {});

  std::uint64_t access_events() const { return access_events_; }
  std::uint64_t dropped_accesses() const { return dropped_; }

  // The whole trace; `gpus` names the processes gpu0..gpuN-1.
  // `failed`: the run's failure line (kFailedCsvMark's text) when it failed, written into
  // otherData as "run_failed"; empty for a run that completed as configured.
  std::string to_json(std::uint32_t gpus, const std::string& failed = {}) const;
  // The process of plane `p`'s fabric tracks (after the GPUs').
  static constexpr std::uint32_t kFabricPid = 1u << 20;

 private:
  struct Event {
    char ph;  // 'X' complete, 'b' async (with its 'e' at ts + dur), 'i' instant
    std::uint32_t pid, tid;
    std::uint64_t id;  // async slices
    Time ts, dur;
    std::string name, cat, args;
    std::uint64_t flow = 0;  // 'X' only: the flow it starts (flow_out) or ends (flow_in)
    bool flow_in = false;
  };
  struct Message {
    std::uint32_t from, to;
    std::string what;
    Time at;
    std::size_t event;  // its 'X' marker in events_
  };
  std::vector<Message> sent_, handled_;
  Options opt_;
  std::vector<Event> events_;
  std::vector<std::uint64_t> seen_;  // per GPU: accesses offered to sample()
  std::uint64_t next_id_ = 1;
  std::uint64_t access_events_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace podsim
