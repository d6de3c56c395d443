// Collectives over load/store (plain C++): the algorithms a scale-up library runs over a
// memory-semantic fabric, written as per-GPU programs of copies, reductions and flags, and the
// executor that turns a program into the loads and stores a GPU issues.
//
// Every participant has one window of its VRAM, exported and mapped by every participant that
// reaches into it: flags (64-byte slots), the input, the output and a scratch area. A program
// reads and writes windows by (participant, region, offset); data moves in granules of the
// access size, each a load per source, a reduction where there are several sources, and a
// store per destination. A flag is a store of the call's number into a peer's flag slot, made
// once everything the program did before it has completed (so the data it announces is in the
// peer's memory), and a wait is a load of one of the GPU's own flag slots, repeated until it
// holds the call's number: the fabric carries the handshakes as it carries the data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim::coll {

enum class Op : std::uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  AllToAllV,
  Broadcast
};
inline constexpr std::array<EnumName<Op>, 6> kOpNames{{
    {"all_reduce", Op::AllReduce,
     "every participant ends with the sum of every input (size: the buffer)"},
    {"all_gather", Op::AllGather,
     "every participant ends with every participant's input side by side (size: the output; "
     "each input is its share)"},
    {"reduce_scatter", Op::ReduceScatter,
     "participant i ends with the sum of every input's share i (size: the input)"},
    {"all_to_all", Op::AllToAll,
     "participant i sends its input's block j to participant j, which keeps it as its output's "
     "block i (size: each input; a multiple of 64 B x the participants)"},
    {"all_to_all_v", Op::AllToAllV,
     "all_to_all with a block size per sender and receiver (workload.collective.send_bytes), as "
     "a mixture of experts' dispatch and combine send tokens (size: the mean a participant "
     "sends)"},
    {"broadcast", Op::Broadcast, "every participant ends with the root's input (size: the buffer)"},
}};

enum class Algorithm : std::uint8_t { Ring, OneShot, TwoShot };
inline constexpr std::array<EnumName<Algorithm>, 3> kAlgorithmNames{{
    {"ring", Algorithm::Ring,
     "each participant stores into the next one's memory and raises its flag, piece by piece "
     "(pipelined); all_reduce is a reduce-scatter then an all-gather around the ring"},
    {"one_shot", Algorithm::OneShot,
     "direct: every participant loads what it needs from every peer (all_to_all stores into "
     "every peer, a piece of chunk_size to each in turn, and raises its flag at each)"},
    {"two_shot", Algorithm::TwoShot,
     "all_reduce: each participant loads its share from every peer and reduces it (reduce-"
     "scatter), raises a flag at every peer, then loads every peer's reduced share (all-gather)"},
}};

// Why an op cannot run with an algorithm, or a size with an op (empty: it can).
std::string invalid(Op op, Algorithm alg);
std::string invalid_size(Op op, std::uint32_t participants, std::uint64_t bytes);
std::string invalid_blocks(std::uint32_t participants, const std::vector<std::uint64_t>& blocks);

// The regions of a window, in this order.
enum class Region : std::uint8_t { Flags, Input, Output, Scratch };
constexpr std::uint64_t kFlagBytes = 64;  // one flag slot: one 64-byte store
// Flag slots [0, kBarrierSlots) belong to the barrier between calls; the algorithms' follow.
constexpr std::uint32_t kBarrierSlots = 16;

struct Ref {
  std::uint32_t rank = 0;  // the participant whose window
  Region region = Region::Input;
  std::uint64_t offset = 0;
  bool operator==(const Ref&) const = default;
};

struct Step {
  enum class Kind : std::uint8_t {
    Copy,    // dst (and dst2) = the one source
    Reduce,  // dst (and dst2) = the sum of the sources (float32)
    Signal,  // store the call's number into flag `dst`, once every earlier step has completed
    Wait,    // load flag `dst` until it holds the call's number (or more)
    Fence,   // wait until every earlier step (flags included) has completed
    Fill,    // store the participant's input data into `dst` (before the calls), or into the
             // output a pattern (NaN) no call leaves, so that a call that writes nothing fails
    Check,   // load `dst` and compare it with the output it must hold (after the calls)
  };
  Kind kind = Kind::Copy;
  std::uint64_t bytes = 0;  // Copy, Reduce, Fill, Check
  Ref dst;
  bool has_dst2 = false;
  Ref dst2;
  std::uint32_t src_begin = 0, src_count = 0;  // into Program::srcs
};

struct Program {
  std::vector<Step> steps;
  std::vector<Ref> srcs;
  // The ranks whose windows it touches (its own among them).
  std::vector<std::uint32_t> peers() const;
  // Flag slots it uses (one past the highest).
  std::uint32_t flag_slots() const;
};

// One call of a collective.
struct Shape {
  Op op = Op::AllReduce;
  Algorithm alg = Algorithm::Ring;
  std::uint32_t n = 2;            // participants
  std::uint64_t bytes = 0;        // the size, as kOpNames says for each op
  std::uint64_t piece = 1 << 16;  // ring, all_to_all: the pipelining unit
  // `piece` as used: a multiple of 64 B, at least 64.
  std::uint64_t piece_bytes() const;
  std::uint32_t root = 0;  // broadcast
  // all_to_all_v: bytes from participant i to j at [i * n + j] (multiples of 64 B).
  std::vector<std::uint64_t> blocks;

  // all_to_all(_v): the block i sends j; where it is in i's input and in j's output.
  std::uint64_t block(std::uint32_t i, std::uint32_t j) const;
  std::uint64_t block_in(std::uint32_t i, std::uint32_t j) const;
  std::uint64_t block_out(std::uint32_t i, std::uint32_t j) const;
  // Share c of `bytes` (64-byte lines split as evenly as they go): its offset and length.
  std::uint64_t chunk_offset(std::uint32_t c) const;
  std::uint64_t chunk_bytes(std::uint32_t c) const { return chunk_offset(c + 1) - chunk_offset(c); }
  // The bytes of each region participant r uses.
  std::uint64_t input_bytes(std::uint32_t r) const;
  std::uint64_t output_bytes(std::uint32_t r) const;
  std::uint64_t scratch_bytes() const;
  // What r's input holds at byte `offset` and what its output must hold there, as float32
  // elements (`count` of them): small whole numbers, so any order of summing is exact.
  void input_at(std::uint32_t r, std::uint64_t offset, float* out, std::size_t count) const;
  void output_at(std::uint32_t r, std::uint64_t offset, float* out, std::size_t count) const;
  // nccl-tests' bus bandwidth factor: algorithm bandwidth x this = bus bandwidth.
  double bus_factor() const;
};

// Each participant's program for one call.
std::vector<Program> build(const Shape& s);
// A transfer from participant 0 to participant 1 of `s.bytes` (s: a broadcast from 0 over 2):
// the sender stores its input into the receiver's output and raises its flag; the receiver
// waits for it.
std::vector<Program> build_send(const Shape& s);
// The barrier before each call (dissemination: log2 n rounds of a flag to rank + 2^k).
Program barrier(std::uint32_t n, std::uint32_t rank);
// Filling r's input (and its output with NaN) before the calls, and checking its output after
// them; without a shape given to the runner (functional data off), the same loads and stores
// with nothing compared.
Program fill(const Shape& s, std::uint32_t r);
Program check(const Shape& s, std::uint32_t r);

// Where the regions are in every window (every participant's the same).
struct Layout {
  std::uint64_t input = 0, output = 0, scratch = 0, window = 0;  // offsets; window: total bytes
  std::uint64_t offset(Region r) const {
    return r == Region::Flags    ? 0
           : r == Region::Input  ? input
           : r == Region::Output ? output
                                 : scratch;
  }
  // Room for `flags` flag slots and every shape's regions.
  static Layout covering(std::span<const Shape> shapes, std::uint32_t flags);
};

// Runs programs on one GPU: tells its agent which access to issue next and takes their
// completions. No SystemC: the agent (models/compute/compute_agent) is the shell.
class Runner {
 public:
  struct Env {
    std::uint32_t rank = 0;
    std::vector<std::uint64_t> window_va;  // by rank: where its window is mapped here (0: not)
    Layout layout;
    std::uint32_t access_size = 256;  // bytes per load or store (64..256)
    std::uint32_t outstanding = 64;   // accesses in flight at most
    Time poll_interval;               // a wait's next load this long after the last came back
    double reduce_ps_per_byte = 0;    // reduction: time per byte of its inputs
  };
  struct Request {
    bool store = false;
    bool sync = false;  // a flag: its data is kept even with functional data off
    std::uint64_t va = 0;
    std::uint32_t size = 0;
    const unsigned char* data = nullptr;  // a store's
    std::uint32_t token = 0;              // give it back with completed()
  };

  explicit Runner(Env env);
  // Starts `prog` (which must outlive the run) now; flags carry `value`. `shape` gives Fill's
  // and Check's data.
  void start(const Program& prog, std::uint64_t value, const Shape* shape, Time now);
  // The next access to issue now, if any.
  bool next(Time now, Request& out);
  // An access issued with `token` completed: `data` is a load's (nullptr: nothing came
  // back: the access failed, which ends the program).
  void completed(std::uint32_t token, const unsigned char* data, Time now);
  // When next() may have something again without a completion (compute done, a poll due);
  // Time::max() when only a completion can move it.
  Time wake_at() const;
  // The program has ended: every step done, or an access failed and nothing is in flight.
  bool done() const;
  bool failed() const { return failed_; }
  // Check: elements compared, and those that differed, since construction.
  std::uint64_t checked() const { return checked_; }
  std::uint64_t wrong() const { return wrong_; }

 private:
  enum class SlotState : std::uint8_t { Free, Loading, Computing, Storing };
  struct Slot {
    SlotState state = SlotState::Free;
    std::uint32_t step = 0;
    std::uint64_t offset = 0;  // within the step's bytes
    std::uint32_t size = 0;
    std::uint32_t loads_issued = 0, loads_done = 0, stores_issued = 0, stores_done = 0;
    Time ready;
  };
  struct Ring {  // a FIFO of slot numbers, fixed capacity
    std::vector<std::uint32_t> v;
    std::size_t head = 0, count = 0;
    void reset(std::size_t cap) { v.assign(cap, 0), head = 0, count = 0; }
    void push(std::uint32_t x) { v[(head + count++) % v.size()] = x; }
    std::uint32_t front() const { return v[head]; }
    void pop() { head = (head + 1) % v.size(), --count; }
    bool empty() const { return count == 0; }
  };
  std::uint64_t va(const Ref& r) const;
  const Step& step(std::uint32_t i) const { return prog_->steps[i]; }
  void issue_load(Slot& s, std::uint32_t slot, Request& out);
  bool issue_store(Slot& s, std::uint32_t slot, Request& out);
  void granule_done(std::uint32_t slot);
  void advance(Time now);
  // Moves data_prefix_ past the completed steps (and the flags) below cur_.
  void settle_prefix();
  // A data step's loads per granule (a check: one), and stores (one per destination).
  static std::uint32_t loads_of(const Step& st) {
    return st.kind == Step::Kind::Check ? 1 : st.src_count;
  }
  static std::uint32_t stores_of(const Step& st) { return st.has_dst2 ? 2 : 1; }
  void finish_loads(std::uint32_t slot, Time now);

  Env env_;
  const Program* prog_ = nullptr;
  const Shape* shape_ = nullptr;
  std::uint64_t value_ = 0;
  std::uint32_t cur_ = 0;            // the step granules are being made from
  std::uint64_t cur_offset_ = 0;     // how far into it
  std::uint32_t data_prefix_ = 0;    // steps before it have completed (signals aside)
  std::vector<std::uint32_t> open_;  // by step: granules (or its flag store) not completed
  std::uint32_t signals_open_ = 0;   // flags registered, not yet completed
  Ring pending_signals_;             // step numbers, waiting for the data before them
  std::vector<Slot> slots_;
  // Each slot's data (256 bytes), apart from the slots so that their bookkeeping stays in a
  // few cache lines.
  std::vector<std::array<float, 64>> data_;
  std::vector<std::uint32_t> free_;
  Ring loading_, storing_, computing_;  // slots with loads / stores to issue, computing
  Time compute_free_;
  std::uint32_t in_flight_ = 0;
  // A wait under way: its poll in flight, or the next one due at poll_due_.
  bool poll_in_flight_ = false;
  Time poll_due_;
  bool waiting_ = false;
  bool failed_ = false;
  std::uint64_t checked_ = 0, wrong_ = 0;
  std::array<unsigned char, kFlagBytes> flag_{};  // a flag's data, until the agent copies it
  static constexpr std::uint32_t kPollToken = 0xFFFFFFFFu;
  static constexpr std::uint32_t kSignalBit = 0x80000000u;
};

}  // namespace podsim::coll
