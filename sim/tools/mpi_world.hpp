// The MPI world podsim runs in (Open MPI): the ranks `mpirun` (or `srun`) started, or one rank
// when podsim was started on its own — then MPI is not even initialised, so a plain run costs
// nothing and needs no launcher. Plain C++.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace podsim::tools {

class MpiWorld {
 public:
  // Called once, first thing in main: initialises MPI if an MPI launcher started this process.
  static void init(int* argc, char*** argv);
  // Called once, last thing in main (also safe when MPI was never initialised).
  static void finalize();
  static int rank();
  static int size();
  static bool launched() { return size() > 1; }

  // Point-to-point byte strings (any length), in order per sender.
  static void send(int to, int tag, const std::string& bytes);
  // From `from` (or any rank, -1); `source` gets the sender.
  static std::string receive(int from, int tag, int* source = nullptr);
  // The largest of each rank's `v` (every rank gets it).
  static int max_all(int v);
  // Every rank's `v`, in rank order (every rank gets them all).
  static std::vector<int> gather_all(int v);
  // What this rank has printed so far that nobody saw (its last newlines left off): a rank other
  // than 0 is silenced (rank 0 speaks for all), so when it refuses alone it sends this to rank 0
  // to print. main() names the buffer; empty until then.
  static void set_silenced(const std::ostringstream* text);
  static std::string silenced();
  // Ends every rank at once with `code` (a rank that cannot go on).
  [[noreturn]] static void abort(int code);
};

}  // namespace podsim::tools
