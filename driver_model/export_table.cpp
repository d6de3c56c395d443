#include "driver_model/export_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace podsim::driver {

namespace {

[[noreturn]] void broken(const ExportNode& n, const std::string& what) {
  throw std::logic_error(fmt::format("export table: handle {:016x}: {}", n.handle().lo, what));
}

std::vector<std::uint64_t> sorted_keys(
    const std::unordered_map<std::uint64_t, ExportTable::Ptr>& m) {
  std::vector<std::uint64_t> keys;
  for (const auto& kv : m)
    keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

// ---- the node ----------------------------------------------------------------------------------

bool ExportNode::has_importers() const {
  bool any = false;
  for (bool b : importers_)
    any = any || b;
  return any;
}

std::size_t ExportNode::importer_count() const {
  std::size_t n = 0;
  for (bool b : importers_)
    n += b;
  return n;
}

void ExportNode::set_pending(AccelId i, bool on) {
  if (pending_[i] == on) return;
  pending_[i] = on;
  if (on)
    ++pending_count_;
  else
    --pending_count_;
}

// ---- lookups -----------------------------------------------------------------------------------

ExportTable::Ptr ExportTable::find(const UalinkHandle& h) const {
  auto it = exports_.find(h.lo);
  if (it == exports_.end() || it->second->handle_.hi != h.hi) return nullptr;
  return it->second;
}

const ExportNode* ExportTable::find_lo(std::uint64_t lo) const {
  auto it = exports_.find(lo);
  return it == exports_.end() ? nullptr : it->second.get();
}

ExportTable::Ptr ExportTable::find_revoked(const UalinkHandle& h) const {
  auto it = invalid_.find(h.lo);
  if (it == invalid_.end() || it->second->handle_.hi != h.hi) return nullptr;
  return it->second;
}

std::vector<ExportTable::Ptr> ExportTable::with_importers() const {
  std::vector<Ptr> v;
  for (const auto& [lo, n] : exports_)
    if (n->has_importers()) v.push_back(n);
  std::sort(v.begin(), v.end(),
            [](const Ptr& a, const Ptr& b) { return a->handle_.lo < b->handle_.lo; });
  return v;
}

std::vector<ExportTable::Ptr> ExportTable::nodes() const {
  std::vector<Ptr> v;
  for (const auto& [lo, n] : exports_)
    v.push_back(n);
  for (const auto& [lo, n] : invalid_)
    v.push_back(n);
  return v;
}

// ---- export and references ---------------------------------------------------------------------

ExportTable::Ptr ExportTable::insert(const UalinkHandle& h, std::uint64_t bo) {
  if (taken(h.lo))
    throw std::logic_error(fmt::format("export table: handle {:016x} is taken", h.lo));
  Ptr node(new ExportNode(h, bo, accels_));
  exports_.emplace(h.lo, node);
  return node;
}

void ExportTable::hold(ExportNode& n) {
  if (n.revoked_) broken(n, "a reference taken to a revoked export");
  ++n.refs_;
}

bool ExportTable::put(ExportNode& n) {
  if (n.refs_ == 0) broken(n, "a reference put that was not held");
  return --n.refs_ == 0 && n.revoked_;
}

// ---- revoke and cleanup ------------------------------------------------------------------------

ExportTable::Ptr ExportTable::revoke(std::uint64_t lo, Time now) {
  auto it = exports_.find(lo);
  if (it == exports_.end()) return nullptr;
  Ptr node = it->second;
  exports_.erase(it);
  invalid_[node->handle_.lo] = node;
  node->revoked_ = true;
  node->revoke_started_ = now;
  return node;
}

std::vector<AccelId> ExportTable::start_cleanup(ExportNode& n) {
  if (!n.revoked_ || n.cleaning_) broken(n, "cleanup of an export not waiting for it");
  n.cleaning_ = true;
  std::vector<AccelId> orig;
  for (std::size_t i = 0; i < n.importers_.size(); ++i)
    if (n.importers_[i]) orig.push_back(static_cast<AccelId>(i));
  return orig;
}

void ExportTable::drop_stale(ExportNode& n, AccelId i) {
  n.importers_[i] = false;
}

void ExportTable::expect_release(ExportNode& n, AccelId i) {
  if (!n.cleaning_) broken(n, "a release expected before cleanup");
  n.set_pending(i, true);
}

void ExportTable::cancel_release(ExportNode& n, AccelId i) {
  n.set_pending(i, false);
}

bool ExportTable::release(ExportNode& n, AccelId i) {
  const bool was = n.pending_[i];
  n.set_pending(i, false);
  return was;
}

void ExportTable::complete(ExportNode& n) {
  n.completed_ = true;
  n.released_.wake_all();
}

void ExportTable::remove(const ExportNode& n) {
  auto it = invalid_.find(n.handle_.lo);
  if (it == invalid_.end() || it->second.get() != &n) broken(n, "removed but not revoked");
  invalid_.erase(it);
}

// ---- importers and ranges ----------------------------------------------------------------------

void ExportTable::undo_range(ExportNode& n, AccelId from) {
  if (mode_ == NpaAddrMode::SourceIdentification)
    n.ident_npa_.erase(from);
  else
    n.shared_npa_.reset();
}

void ExportTable::add_importer(ExportNode& n, AccelId i, std::uint32_t gen) {
  if (n.importers_[i]) return;
  n.importers_[i] = true;
  n.gen_[i] = gen;
}

std::optional<std::uint64_t> ExportTable::range_of(const ExportNode& n, AccelId i) const {
  if (mode_ == NpaAddrMode::SourceIdentification) {
    auto r = n.ident_npa_.find(i);
    if (r == n.ident_npa_.end()) return std::nullopt;
    return r->second;
  }
  return n.shared_npa_;
}

std::vector<NpaRange> ExportTable::take_ranges(ExportNode& n, const std::vector<AccelId>& orig) {
  std::vector<NpaRange> taken;
  if (mode_ == NpaAddrMode::SourceIdentification) {
    for (AccelId i : orig) {
      auto r = n.ident_npa_.find(i);
      if (r == n.ident_npa_.end()) continue;
      taken.push_back({i, r->second, false});
      n.ident_npa_.erase(r);
    }
  } else if (n.shared_npa_) {
    taken.push_back({0, *n.shared_npa_, true});
    n.shared_npa_.reset();
  }
  return taken;
}

std::optional<ExportTable::Dropped> ExportTable::drop_importer(ExportNode& n, AccelId peer) {
  if (!n.importers_[peer]) return std::nullopt;
  n.importers_[peer] = false;
  n.set_pending(peer, false);
  Dropped d;
  d.mine = !n.cleaning_;
  if (!d.mine) return d;
  if (mode_ == NpaAddrMode::SourceIdentification) {
    auto r = n.ident_npa_.find(peer);
    if (r != n.ident_npa_.end()) {
      d.range = NpaRange{peer, r->second, false};
      n.ident_npa_.erase(r);
    }
  } else if (n.shared_npa_ && !n.has_importers()) {
    d.range = NpaRange{peer, *n.shared_npa_, true};
    n.shared_npa_.reset();
  }
  return d;
}

// ---- the whole table ---------------------------------------------------------------------------

void ExportTable::clear() {
  exports_.clear();
  invalid_.clear();
}

void ExportTable::check() const {
  auto node = [&](std::uint64_t lo, const ExportNode& n, bool revoked) {
    if (n.handle_.lo != lo) broken(n, fmt::format("filed under {:016x}", lo));
    if (n.importers_.size() != accels_ || n.gen_.size() != accels_ || n.pending_.size() != accels_)
      broken(n, "importer tables of the wrong size");
    if (n.revoked_ != revoked)
      broken(n, revoked ? "in handle_invalid_xa but not revoked" : "in exp_xa but revoked");
    if (!revoked && (n.cleaning_ || n.refs_ == 0))
      broken(n, "exported but in cleanup or without the table's reference");
    std::size_t pending = 0;
    for (std::size_t i = 0; i < accels_; ++i) {
      pending += n.pending_[i] ? 1 : 0;
      if (n.importers_[i] && n.gen_[i] == 0)
        broken(n, fmt::format("importer {} without a generation", i));
      if (n.pending_[i] && (!n.cleaning_ || n.gen_[i] == 0))
        broken(n, fmt::format("release expected from {}, before cleanup or never an importer", i));
    }
    if (pending != n.pending_count_)
      broken(n, fmt::format("{} releases expected, counted as {}", pending, n.pending_count_));
    // A range without its importer: only while a request (or cleanup) holds the node.
    const bool held = n.cleaning_ || n.refs_ > (n.revoked_ ? 0u : 1u);
    if (mode_ == NpaAddrMode::SourceIdentification) {
      if (n.shared_npa_) broken(n, "a shared range when source-identifying");
      for (const auto& [i, page] : n.ident_npa_)
        if (i >= accels_ || (!n.importers_[i] && !held))
          broken(n, fmt::format("a range for {}, not an importer", i));
    } else {
      if (!n.ident_npa_.empty()) broken(n, "a per-importer range when source-aliasing");
      if (n.shared_npa_ && !n.has_importers() && !held)
        broken(n, "a shared range with no importer");
    }
  };
  for (const auto& [lo, n] : exports_) {
    node(lo, *n, false);
    if (invalid_.count(lo)) broken(*n, "in exp_xa and handle_invalid_xa");
  }
  for (const auto& [lo, n] : invalid_)
    node(lo, *n, true);
}

void ExportTable::digest(Digest& d) const {
  auto bits = [&](const std::vector<bool>& v) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i]) d.add(i);
    d.add(UINT64_MAX);
  };
  auto export_node = [&](const ExportNode& n) {
    d.add(n.handle_.lo).add(n.handle_.hi).add(n.bo_).add(n.refs_).add(n.revoked_).add(n.cleaning_);
    bits(n.importers_);
    for (std::size_t i = 0; i < n.importers_.size(); ++i)
      if (n.importers_[i]) d.add(n.gen_[i]);
    bits(n.pending_);
    d.add(n.shared_npa_ ? *n.shared_npa_ + 1 : 0);
    for (const auto& [imp, page] : n.ident_npa_)
      d.add(imp).add(page);
    d.add(UINT64_MAX);
  };
  d.add("exports");
  for (std::uint64_t lo : sorted_keys(exports_))
    export_node(*exports_.at(lo));
  d.add("revoking");
  for (std::uint64_t lo : sorted_keys(invalid_))
    export_node(*invalid_.at(lo));
}

}  // namespace podsim::driver
