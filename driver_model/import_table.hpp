// The driver's import side (protocol reference, "Import", "RSP and FAIL at the importer",
// "Importer receiving REVOKE", "Connection reset"): imp_xa, one node per imported handle lo.
// A node is NOT_READY while its NPA_REQ is out, PENDING once answered (NPA_RSP: the NPA and
// size; NPA_FAIL: the reason), READY once its buffer is made; a REVOKE of a READY node, or a
// reset of its exporter's connection, makes it TEARDOWN and takes it out. Plain C++; the Driver
// runs the messages and makes the buffers, this keeps the nodes and their rules
// (tests/unit/test_import_table.cpp):
// - a node is filed under its own handle lo, and is never TEARDOWN while in the table;
// - an answer is taken only by a NOT_READY node (unless B5: an RSP overwrites any node);
// - only a PENDING node becomes READY, and a READY node has its buffer and no failure;
// - only a READY node is revoked, and only with its hi; a reset takes every node of that
//   exporter, whatever its state, and wakes its waiters.
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
  const std::optional<FailReason>& fail() const { return fail_; }
  std::uint64_t bo() const { return bo_; }  // the buffer once READY (0 before)
  // Woken when the node is answered or torn down by a reset.
  WaitQueue& answered() { return answered_; }

 private:
  friend class ImportTable;
  explicit ImportNode(const UalinkHandle& h) : handle_(h) {}

  UalinkHandle handle_;
  ImportState state_ = ImportState::NotReady;
  std::uint64_t npa_page_ = 0;
  std::uint32_t size_pages_ = 0;
  std::optional<FailReason> fail_;
  std::uint64_t bo_ = 0;
  WaitQueue answered_;
};

class ImportTable {
 public:
  using Ptr = std::shared_ptr<ImportNode>;

  std::size_t size() const { return imports_.size(); }
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

  // NPA_RSP from `exporter`: a NOT_READY node stores `npa_page | exporter << 29` and the size
  // and becomes PENDING, woken. Any other node, or none, is unsolicited: false; with
  // `overwrite` (B5) a node in another state still takes the fields.
  bool respond(std::uint64_t lo, AccelId exporter, std::uint32_t npa_page, std::uint32_t size_pages,
               bool overwrite);
  // NPA_FAIL: a NOT_READY node stores the reason and becomes PENDING, woken; false otherwise.
  bool fail(std::uint64_t lo, FailReason reason);
  // An NPA and size an importer can use: neither 0, and the window page not 0.
  static bool usable(std::uint64_t npa_page, std::uint64_t size_pages);
  // What the answered import returns: EINVAL if torn down, the failure's errno, EINVAL for an
  // unusable NPA or size, else Ok.
  static Errno outcome(const ImportNode& n);
  // The buffer is made: PENDING -> READY. Throws std::logic_error from any other state or with
  // a failure stored.
  void ready(ImportNode& n, std::uint64_t bo);

  // NPA_REVOKE: a READY node whose lo and hi match goes TEARDOWN and out of the table; null
  // (unsolicited, changing nothing) otherwise.
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
