// The driver's import side (protocol reference, "Import", "RSP and FAIL at the importer",
// "Importer receiving REVOKE", "Connection reset"): imp_xa, one node per imported handle lo.
// A node is NOT_READY while its NPA_REQ is out, PENDING once answered (NPA_RSP: the NPA and
// size; NPA_FAIL: the reason), READY once its buffer is made; a REVOKE of a READY node, or a
// reset of its exporter's connection, makes it TEARDOWN and takes it out. Plain C++; the Driver
// runs the messages and makes the buffers, this keeps the nodes and their rules
// (tests/unit/test_import_table.cpp):
// - a node is filed under its own handle lo, and is never TEARDOWN while in the table;
// - an answer is taken only by a NOT_READY node (B5: an unsolicited NPA_RSP or NPA_FAIL still
//   overwrites the fields of a node in another state);
// - only a PENDING node answered by NPA_RSP becomes READY, and a READY node has its buffer;
// - a revoke takes a node only with its hi, in any state (the Driver decides what a revoke of
//   a node not READY yet means); a reset takes every node of that exporter, whatever its
//   state; both wake its waiters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "driver_model/coro.hpp"
#include "driver_model/errno.hpp"
#include "driver_model/messages.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/ids.hpp"

namespace podsim::driver {

enum class ImportState : std::uint8_t { NotReady, Pending, Ready, Teardown };

// What an importer returns for an NPA_FAIL reason: NOSPACE is ENOSPC, anything else EINVAL.
inline Errno errno_of(FailReason r) {
  return r == FailReason::NoSpace ? Errno::NoSpc : Errno::Inval;
}

class ImportTable;

// One imported handle. Read here; changed only through its ImportTable.
class ImportNode {
 public:
  const UalinkHandle& handle() const { return handle_; }
  ImportState state() const { return state_; }
  std::uint64_t npa_page() const { return npa_page_; }  // full NPA page (exporter ID at 38:29)
  std::uint32_t size_pages() const { return size_pages_; }
  // The reason of the NPA_FAIL that answered it (B5: or of a later, unsolicited one).
  const std::optional<FailReason>& fail() const { return fail_; }
  std::uint64_t bo() const { return bo_; }  // the buffer once READY (0 before)
  // The connection generation its NPA_REQ went out on (0 until then).
  std::uint32_t generation() const { return generation_; }
  // Woken when the node is answered, or torn down by a reset or a revoke.
  WaitQueue& answered() { return answered_; }

 private:
  friend class ImportTable;
  explicit ImportNode(const UalinkHandle& h) : handle_(h) {}

  UalinkHandle handle_;
  ImportState state_ = ImportState::NotReady;
  std::uint64_t npa_page_ = 0;
  std::uint32_t size_pages_ = 0;
  std::optional<FailReason> fail_;
  bool refused_ = false;  // answered by NPA_FAIL
  std::uint64_t bo_ = 0;
  std::uint32_t generation_ = 0;
  WaitQueue answered_;
};

class ImportTable {
 public:
  using Ptr = std::shared_ptr<ImportNode>;

  std::size_t size() const { return imports_.size(); }
  // Every node, by handle lo (in order).
  std::vector<Ptr> nodes() const;
  bool contains(std::uint64_t lo) const { return imports_.count(lo) != 0; }
  // The node's state; TEARDOWN if there is none.
  ImportState state(std::uint64_t lo) const;
  // A repeated import: nothing if there is no node for `h.lo` (a first import); otherwise
  // EINVAL if `check_hi` and hi differs, EAGAIN while NOT_READY or PENDING, EINVAL for
  // TEARDOWN, or Ok with the READY node's buffer.
  struct Cached {
    Errno err = Errno::Ok;
    std::uint64_t bo = 0;
  };
  std::optional<Cached> cached(const UalinkHandle& h, bool check_hi) const;

  // A first import: a NOT_READY node for `h`; null if `h.lo` has one (the insert race lost).
  Ptr insert(const UalinkHandle& h);
  // The import failed: its node goes, unless it is no longer the one filed under its lo.
  void abandon(const Ptr& n);
  // Its NPA_REQ goes out on connection generation `gen`.
  void sent(ImportNode& n, std::uint32_t gen) { n.generation_ = gen; }
  // The node filed under `h.lo` if its hi matches; null if none.
  const ImportNode* find(const UalinkHandle& h) const;
  // The nodes of `exporter` whose NPA_REQ went out on a connection generation before `gen`.
  std::vector<const ImportNode*> older_than(AccelId exporter, std::uint32_t gen) const;

  // NPA_RSP from `exporter`: a NOT_READY node stores `npa_page | exporter << 29` and the size
  // and becomes PENDING, woken. Any other node, or none, is unsolicited: false; with
  // `overwrite` (B5) a node in another state still takes the fields.
  bool respond(std::uint64_t lo, AccelId exporter, std::uint32_t npa_page, std::uint32_t size_pages,
               bool overwrite);
  // NPA_FAIL: a NOT_READY node stores the reason and becomes PENDING, woken. Any other node,
  // or none, is unsolicited: false; with `overwrite` (B5) a node in another state still takes
  // the reason (its state stays: a READY node stays READY).
  bool fail(std::uint64_t lo, FailReason reason, bool overwrite);
  // An NPA and size an importer can use: neither 0, and the window page not 0.
  static bool usable(std::uint64_t npa_page, std::uint64_t size_pages);
  // What the answered import returns: EINVAL if torn down, the failure's errno, EINVAL for an
  // unusable NPA or size, else Ok.
  static Errno outcome(const ImportNode& n);
  // The buffer is made: PENDING -> READY. Throws std::logic_error from any other state or if
  // the answer was an NPA_FAIL.
  void ready(ImportNode& n, std::uint64_t bo);

  // NPA_REVOKE: the node whose lo and hi match goes TEARDOWN and out of the table, its waiter
  // woken (a node not READY yet has no buffer); null (unsolicited, changing nothing) if none.
  Ptr revoke(const UalinkHandle& h);
  // The connection to `exporter` is reset: each of its nodes goes TEARDOWN, woken, and out of
  // the table, in the table's order.
  std::vector<Ptr> tear_down(AccelId exporter);

  // Coroutines waiting for an answer.
  std::size_t waiting() const;
  // Device reset: the table emptied.
  void clear() { imports_.clear(); }
  // Throws std::logic_error naming the first rule (see the top of this file) that does not hold.
  void check() const;
  // "imports", then each node by handle lo: handle, state, NPA, size, buffer, failure.
  void digest(Digest& d) const;

 private:
  std::unordered_map<std::uint64_t, Ptr> imports_;  // imp_xa, by handle lo
};

}  // namespace podsim::driver
