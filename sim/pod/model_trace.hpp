// Model traces (plain C++): what each GPU of a model's step does — compute, collectives over
// groups of GPUs, point-to-point transfers — and what each waits for. The JSON form:
//
//   {
//     "groups": {"tp0": [0, 1, 2, 3]},
//     "nodes": [
//       {"id": "attn", "gpu": 0, "type": "compute", "duration": "12us"},
//       {"id": "ar", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "tp0",
//        "bytes": "8MiB", "algorithm": "ring", "deps": ["attn"]},
//       {"id": "d", "gpu": 0, "type": "collective", "op": "all_to_all_v", "group": "tp0",
//        "send_bytes": ["0B", "1MiB", "64KiB", "64KiB"], "deps": ["ar"]},
//       {"id": "s", "gpu": 0, "type": "send", "peer": 4, "bytes": "1MiB", "tag": 7},
//       {"id": "r", "gpu": 4, "type": "recv", "peer": 0, "bytes": "1MiB", "tag": 7}
//     ]
//   }
//
// A node runs once every node it depends on (on its own GPU) has finished. The k-th collective
// of a group on each of its members is one call, so every member must list the group's
// collectives in the same order with the same op, size and algorithm (an all_to_all_v's sizes
// are each member's own: its row of what goes where); the k-th send from a to b
// with a tag meets the k-th receive at b from a with that tag, of the same size. Everything
// wrong with a trace is a ModelTraceError naming the file and the node (or group).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute/collective.hpp"
#include "sim/core/units.hpp"

namespace podsim {

class ModelTraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ModelNode {
  enum class Type : std::uint8_t { Compute, Collective, Send, Recv };
  std::string id;
  std::uint32_t gpu = 0;
  Type type = Type::Compute;
  // compute: a duration, or work at the GPU's rates (gpu.compute): flops and bytes of memory
  std::optional<Time> duration;
  double flops = 0;
  std::uint64_t memory_bytes = 0;
  // collective
  coll::Op op = coll::Op::AllReduce;
  coll::Algorithm algorithm = coll::Algorithm::Ring;
  std::string group;
  // collective, send, recv: the size (a collective's as workload.collective.sizes counts it;
  // all_to_all_v: the most this member sends)
  std::uint64_t bytes = 0;
  // all_to_all_v: what this member sends to each member of its group, in the group's order
  std::vector<std::uint64_t> send_bytes;
  // broadcast: the GPU whose input every member ends with (a member; default the group's first)
  std::uint32_t root = 0;
  // send, recv
  std::uint32_t peer = 0;
  std::uint64_t tag = 0;
  std::vector<std::size_t> deps;  // indices of the nodes it waits for
};

struct ModelTrace {
  std::map<std::string, std::vector<std::uint32_t>> groups;
  std::vector<ModelNode> nodes;
  // A trace of a critical path's length, when every node's time is known in advance (compute
  // with a duration only): the longest chain of durations.
  std::optional<Time> critical_path() const;
};

// Reads and checks a model trace in the JSON form for a pod of `gpus` GPUs whose collectives
// are split into pieces of `chunk_size` (workload.collective.chunk_size; at most 65536 pieces to
// a size); `name` is the file's, for messages.
ModelTrace parse_model_trace(const std::string& text, const std::string& name, std::uint32_t gpus,
                             std::uint64_t chunk_size);
// The same from `path`: a JSON file, or the prefix of a Chakra trace (PREFIX.0.et, ...; see
// sim/pod/chakra_trace.hpp), whose communicator groups are in the file `groups` (empty: none).
ModelTrace load_model_trace(const std::string& path, std::uint32_t gpus, std::uint64_t chunk_size,
                            const std::string& groups = "");
// What every form of trace must satisfy once its nodes are read and their dependencies resolved
// (each on its own GPU): no collective of more than 65536 pieces, no cycle, every group's calls
// alike on each member, every send met by its receive. `name` is the trace's, for messages.
void check_model_trace(const ModelTrace& t, const std::string& name, std::uint64_t chunk_size);

}  // namespace podsim
