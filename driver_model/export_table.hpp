// The driver's export side (protocol reference, "Export", "Exporter handling of NPA_REQ",
// "Revoke and release", "Connection reset"): exp_xa, the exported buffers by handle lo, and
// handle_invalid_xa, the revoked ones until their cleanup ends. Each node records which
// importers were handed an NPA range and at which connection generation, the ranges (one
// shared range when source-aliasing, one per importer when source-identifying), and whose
// NPA_RELEASE is still expected. Plain C++; the Driver runs the messages, pins, maps and frees,
// this keeps the nodes and their rules (tests/unit/test_export_table.cpp):
// - a handle lo is in at most one of the two maps, under its own node;
// - an exported node is not revoked, not in cleanup, expects no release and holds the table's
//   reference; a revoked node is in handle_invalid_xa; nobody takes a reference to it again;
// - an importer's bit set means its connection generation (never 0) is recorded;
// - a release is expected only once cleanup has started, and only from an importer of its
//   snapshot. With B4 fixed every mark is set before the first NPA_REVOKE goes out and a reset
//   clears mark and bit together, so the marks stay within the importers; with B4 a reset
//   between two sends can drop an importer that is marked after, so the table does not insist;
// - source-aliasing uses only the shared range, source-identification only per-importer ones;
//   a range without its importer exists only while a request or cleanup holds the node.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "driver_model/coro.hpp"
#include "driver_model/messages.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/ids.hpp"
#include "sim/core/units.hpp"

namespace podsim::driver {

class ExportTable;

// One exported buffer. Read here; changed only through its ExportTable.
class ExportNode {
 public:
  const UalinkHandle& handle() const { return handle_; }
  std::uint64_t bo() const { return bo_; }
  // The export table's reference (until revoked), plus one per NPA_REQ or eviction in progress.
  std::uint32_t refs() const { return refs_; }
  bool importer(AccelId i) const { return importers_[i]; }
  bool has_importers() const;
  std::size_t importer_count() const;
  // The connection generation importer `i` was added at (meaningful while importer(i)).
  std::uint32_t generation(AccelId i) const { return gen_[i]; }
  // Revoke: NPA_RELEASE still expected from `i`.
  bool pending(AccelId i) const { return pending_[i]; }
  bool any_pending() const { return pending_count_ != 0; }
  // Source-aliasing: the one range (window page). Source-identification: one per importer.
  const std::optional<std::uint64_t>& shared_npa() const { return shared_npa_; }
  const std::map<AccelId, std::uint64_t>& ident_npa() const { return ident_npa_; }
  bool revoked() const { return revoked_; }    // out of exp_xa, waiting for or in cleanup
  bool cleaning() const { return cleaning_; }  // cleanup has taken its snapshot of importers
  Time revoke_started() const { return revoke_started_; }
  // Woken when the last expected release arrives (or its importer is reset).
  WaitQueue& released() { return released_; }
  // The cleanup worker has been woken so (a completion: it stays done). With every importer
  // marked before the first NPA_REVOKE this means no release is expected any more; with B4 a
  // RELEASE can complete it while later importers are still to be marked.
  bool completed() const { return completed_; }

 private:
  friend class ExportTable;
  ExportNode(const UalinkHandle& h, std::uint64_t bo, std::size_t accels)
      : handle_(h), bo_(bo), importers_(accels, false), gen_(accels, 0), pending_(accels, false) {}

  UalinkHandle handle_;
  std::uint64_t bo_ = 0;
  std::uint32_t refs_ = 1;
  std::vector<bool> importers_;     // bit I: importer I was handed an NPA range
  std::vector<std::uint32_t> gen_;  // connection generation when I was added
  std::optional<std::uint64_t> shared_npa_;
  std::map<AccelId, std::uint64_t> ident_npa_;
  std::vector<bool> pending_;
  std::uint32_t pending_count_ = 0;  // bits set in pending_
  void set_pending(AccelId i, bool on);
  WaitQueue released_;
  Time revoke_started_;
  bool revoked_ = false;
  bool cleaning_ = false;
  bool completed_ = false;
};

// The range an NPA_REQ gets: a failure, or a window page (fresh: newly allocated, to be mapped;
// otherwise the shared range again).
struct RangeGrant {
  std::optional<FailReason> failure;
  std::uint64_t window_page = 0;
  bool fresh = false;
};

// An NPA range to unmap and free: `importer`'s (source-identification) or the shared one.
struct NpaRange {
  AccelId importer = 0;
  std::uint64_t window_page = 0;
  bool shared = false;  // in the exporter's own window
};

class ExportTable {
 public:
  using Ptr = std::shared_ptr<ExportNode>;

  ExportTable(std::size_t accels, NpaAddrMode mode) : accels_(accels), mode_(mode) {}

  // ---- lookups -----------------------------------------------------------------------------
  std::size_t size() const { return exports_.size(); }      // exp_xa
  std::size_t revoking() const { return invalid_.size(); }  // handle_invalid_xa
  // In either map: a new handle must not take it.
  bool taken(std::uint64_t lo) const { return exports_.count(lo) || invalid_.count(lo); }
  // Exported, lo and hi matching (NPA_REQ); null if not.
  Ptr find(const UalinkHandle& h) const;
  // Exported, by lo alone; null if not.
  const ExportNode* find_lo(std::uint64_t lo) const;
  // Revoked and not yet cleaned up, lo and hi matching (NPA_RELEASE); null if not.
  Ptr find_revoked(const UalinkHandle& h) const;
  // Exported nodes with at least one importer, by handle lo.
  std::vector<Ptr> with_importers() const;
  // Every node: exp_xa's, then handle_invalid_xa's, each in its map's order.
  std::vector<Ptr> nodes() const;

  // ---- export and references ---------------------------------------------------------------
  // A new node in exp_xa holding the table's reference. Throws std::logic_error if `h.lo` is
  // taken.
  Ptr insert(const UalinkHandle& h, std::uint64_t bo);
  // A reference for a request or an eviction; only an exported node may be taken.
  void hold(ExportNode& n);
  // Drops a reference; true if that was the last one of a revoked node: it is for cleanup.
  bool put(ExportNode& n);

  // ---- revoke and cleanup ------------------------------------------------------------------
  // exp_xa -> handle_invalid_xa, revoked at `now`; the table's reference is the caller's to put.
  // Null, changing nothing, if `lo` is not exported.
  Ptr revoke(std::uint64_t lo, Time now);
  // Cleanup starts: the snapshot of the importers (orig), ascending.
  std::vector<AccelId> start_cleanup(ExportNode& n);
  // Cleanup found `i` no longer ready at its generation: out of the importers.
  void drop_stale(ExportNode& n, AccelId i);
  // NPA_REVOKE goes to importer `i` (of the snapshot): its release is expected. Only in cleanup.
  void expect_release(ExportNode& n, AccelId i);
  // Not expected any more (the REVOKE could not be sent, or the importer never answered).
  void cancel_release(ExportNode& n, AccelId i);
  // NPA_RELEASE from `i`: no longer expected; false if it was not.
  bool release(ExportNode& n, AccelId i);
  // No release is expected any more: the cleanup worker is woken, and its wait is complete
  // from now on (completed()).
  void complete(ExportNode& n);
  // Cleanup ends: out of handle_invalid_xa. Throws std::logic_error if it is not there.
  void remove(const ExportNode& n);

  // ---- importers and ranges ----------------------------------------------------------------
  // The range for importer `from`'s request. Source-identification: a second one for the same
  // importer is DUPLICATE. Source-aliasing: the shared range again if there is one. Otherwise
  // `allocate()` (-> std::optional<std::uint64_t> window page) is asked, NOSPACE if it has none.
  template <class Allocate>
  RangeGrant grant_range(ExportNode& n, AccelId from, Allocate&& allocate);
  // The RSP could not be sent: the range this request allocated is forgotten.
  void undo_range(ExportNode& n, AccelId from);
  // The RSP was sent: `i` is an importer; its generation is recorded the first time.
  void add_importer(ExportNode& n, AccelId i, std::uint32_t gen);
  // Importer `i`'s range (window page): its own, or the shared one.
  std::optional<std::uint64_t> range_of(const ExportNode& n, AccelId i) const;
  // Cleanup frees the ranges of its snapshot: taken out of the node, to be freed.
  std::vector<NpaRange> take_ranges(ExportNode& n, const std::vector<AccelId>& orig);
  // A connection reset drops importer `peer`: out of the importers and the expected releases.
  // `mine`: the reset undoes its pin and range (once cleanup has its snapshot, cleanup does);
  // `range`: the range now to unmap and free (ident: the peer's; alias: the shared one when no
  // importer is left). Nothing, changing nothing, if `peer` is not an importer.
  struct Dropped {
    bool mine = false;
    std::optional<NpaRange> range;
  };
  std::optional<Dropped> drop_importer(ExportNode& n, AccelId peer);

  // ---- the whole table ---------------------------------------------------------------------
  // Device reset: both maps emptied.
  void clear();
  // Throws std::logic_error naming the first rule (see the top of this file) that does not hold.
  void check() const;
  // "exports", exp_xa's nodes by handle lo, "revoking", handle_invalid_xa's likewise.
  void digest(Digest& d) const;

 private:
  std::size_t accels_;
  NpaAddrMode mode_;
  std::unordered_map<std::uint64_t, Ptr> exports_;  // exp_xa, by handle lo
  std::unordered_map<std::uint64_t, Ptr> invalid_;  // handle_invalid_xa
};

template <class Allocate>
RangeGrant ExportTable::grant_range(ExportNode& n, AccelId from, Allocate&& allocate) {
  RangeGrant g;
  if (mode_ == NpaAddrMode::SourceIdentification) {
    if (n.ident_npa_.count(from)) {
      g.failure = FailReason::Duplicate;
    } else if (std::optional<std::uint64_t> got = allocate()) {
      g.window_page = *got;
      g.fresh = true;
      n.ident_npa_[from] = g.window_page;
    } else {
      g.failure = FailReason::NoSpace;
    }
  } else if (n.shared_npa_) {
    g.window_page = *n.shared_npa_;
  } else if (std::optional<std::uint64_t> got = allocate()) {
    g.window_page = *got;
    g.fresh = true;
    n.shared_npa_ = g.window_page;
  } else {
    g.failure = FailReason::NoSpace;
  }
  return g;
}

}  // namespace podsim::driver
