#include "driver_model/import_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/npa_mmu/npa_layout.hpp"

namespace podsim::driver {

namespace {

[[noreturn]] void broken(const ImportNode& n, const std::string& what) {
  throw std::logic_error(fmt::format("import table: handle {:016x}: {}", n.handle().lo, what));
}

}  // namespace

ImportState ImportTable::state(std::uint64_t lo) const {
  auto it = imports_.find(lo);
  return it == imports_.end() ? ImportState::Teardown : it->second->state_;
}

std::optional<ImportTable::Cached> ImportTable::cached(const UalinkHandle& h, bool check_hi) const {
  auto it = imports_.find(h.lo);
  if (it == imports_.end()) return std::nullopt;
  const ImportNode& n = *it->second;
  if (check_hi && n.handle_.hi != h.hi) return Cached{Errno::Inval, 0};
  switch (n.state_) {
    case ImportState::NotReady:
    case ImportState::Pending: return Cached{Errno::Again, 0};
    case ImportState::Teardown: return Cached{Errno::Inval, 0};
    case ImportState::Ready: break;
  }
  return Cached{Errno::Ok, n.bo_};
}

ImportTable::Ptr ImportTable::insert(const UalinkHandle& h) {
  if (imports_.count(h.lo)) return nullptr;
  Ptr node(new ImportNode(h));
  imports_[h.lo] = node;
  return node;
}

void ImportTable::abandon(const Ptr& n) {
  auto cur = imports_.find(n->handle_.lo);
  if (cur != imports_.end() && cur->second == n) imports_.erase(cur);
}

const ImportNode* ImportTable::find(const UalinkHandle& h) const {
  auto it = imports_.find(h.lo);
  if (it == imports_.end() || it->second->handle_.hi != h.hi) return nullptr;
  return it->second.get();
}

std::vector<const ImportNode*> ImportTable::older_than(AccelId exporter, std::uint32_t gen) const {
  std::vector<const ImportNode*> v;
  for (const auto& [lo, n] : imports_)
    if (n->handle_.exporter() == exporter && n->generation_ != 0 && n->generation_ < gen)
      v.push_back(n.get());
  std::sort(v.begin(), v.end(),
            [](const ImportNode* a, const ImportNode* b) { return a->handle_.lo < b->handle_.lo; });
  return v;
}

bool ImportTable::respond(std::uint64_t lo, AccelId exporter, std::uint32_t npa_page,
                          std::uint32_t size_pages, bool overwrite) {
  auto it = imports_.find(lo);
  if (it == imports_.end()) return false;
  ImportNode& n = *it->second;
  const bool solicited = n.state_ == ImportState::NotReady;
  if (!solicited && !overwrite) return false;
  n.npa_page_ = npa_page | (static_cast<std::uint64_t>(exporter) << kNpaWindowPageBits);
  n.size_pages_ = size_pages;
  if (solicited) {
    n.state_ = ImportState::Pending;
    n.answered_.wake_all();
  }
  return solicited;
}

bool ImportTable::fail(std::uint64_t lo, FailReason reason, bool overwrite) {
  auto it = imports_.find(lo);
  if (it == imports_.end()) return false;
  ImportNode& n = *it->second;
  const bool solicited = n.state_ == ImportState::NotReady;
  if (!solicited && !overwrite) return false;
  n.fail_ = reason;
  if (solicited) {
    n.refused_ = true;
    n.state_ = ImportState::Pending;
    n.answered_.wake_all();
  }
  return solicited;
}

bool ImportTable::usable(std::uint64_t npa_page, std::uint64_t size_pages) {
  return npa_page != 0 && size_pages != 0 && (npa_page & kNpaWindowPageMask) != 0;
}

Errno ImportTable::outcome(const ImportNode& n) {
  if (n.state_ == ImportState::Teardown) return Errno::Inval;  // reset meanwhile
  if (n.fail_) return errno_of(*n.fail_);
  if (!usable(n.npa_page_, n.size_pages_)) return Errno::Inval;
  return Errno::Ok;
}

void ImportTable::ready(ImportNode& n, std::uint64_t bo) {
  if (n.state_ != ImportState::Pending || n.refused_)
    broken(n, "made ready without an answer, or refused");
  n.bo_ = bo;
  n.state_ = ImportState::Ready;
}

ImportTable::Ptr ImportTable::revoke(const UalinkHandle& h) {
  auto it = imports_.find(h.lo);
  if (it == imports_.end() || it->second->handle_.hi != h.hi) return nullptr;
  Ptr node = it->second;
  node->state_ = ImportState::Teardown;
  node->answered_.wake_all();
  imports_.erase(it);
  return node;
}

std::vector<ImportTable::Ptr> ImportTable::tear_down(AccelId exporter) {
  std::vector<Ptr> gone;
  for (auto it = imports_.begin(); it != imports_.end();) {
    if (it->second->handle_.exporter() == exporter) {
      it->second->state_ = ImportState::Teardown;
      it->second->answered_.wake_all();
      gone.push_back(it->second);
      it = imports_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

std::size_t ImportTable::waiting() const {
  std::size_t n = 0;
  for (const auto& [lo, node] : imports_)
    n += node->answered_.size();
  return n;
}

void ImportTable::check() const {
  for (const auto& [lo, n] : imports_) {
    if (n->handle_.lo != lo) broken(*n, fmt::format("filed under {:016x}", lo));
    if (n->state_ == ImportState::Teardown) broken(*n, "torn down but still in the table");
    if (n->state_ == ImportState::NotReady && (n->fail_ || n->bo_))
      broken(*n, "not answered, yet with a failure or a buffer");
    if (n->state_ == ImportState::Ready && (n->refused_ || n->bo_ == 0))
      broken(*n, "ready though refused, or without a buffer");
    if (n->state_ != ImportState::Ready && n->bo_ != 0) broken(*n, "a buffer before ready");
  }
}

void ImportTable::digest(Digest& d) const {
  std::vector<std::uint64_t> keys;
  for (const auto& kv : imports_)
    keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  d.add("imports");
  for (std::uint64_t lo : keys) {
    const ImportNode& n = *imports_.at(lo);
    d.add(n.handle_.lo)
        .add(n.handle_.hi)
        .add(static_cast<std::uint64_t>(n.state_))
        .add(n.npa_page_);
    d.add(n.size_pages_).add(n.bo_).add(n.fail_ ? static_cast<std::uint64_t>(*n.fail_) + 1 : 0);
  }
}

std::vector<ImportTable::Ptr> ImportTable::nodes() const {
  std::vector<Ptr> out;
  out.reserve(imports_.size());
  for (const auto& [lo, n] : imports_)
    out.push_back(n);
  std::sort(out.begin(), out.end(),
            [](const Ptr& a, const Ptr& b) { return a->handle().lo < b->handle().lo; });
  return out;
}

}  // namespace podsim::driver
