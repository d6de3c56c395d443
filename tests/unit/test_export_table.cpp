// The driver's export table on its own: exp_xa and handle_invalid_xa, references, importers,
// NPA ranges, expected releases and what a connection reset takes.
#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <vector>

#include "driver_model/export_table.hpp"

using namespace podsim;
using namespace podsim::driver;

namespace {

constexpr std::size_t kAccels = 8;

UalinkHandle handle(std::uint64_t lo, std::uint64_t hi = 0xABCD) {
  return UalinkHandle{lo, hi};
}

// An allocator for grant_range that hands out `pages` once, counting the calls.
struct Alloc {
  std::optional<std::uint64_t> page;
  int calls = 0;
  auto fn() {
    return [this]() -> std::optional<std::uint64_t> {
      ++calls;
      return page;
    };
  }
};

// An export with importers `ids` (generation 1), each granted a range from `first` up.
ExportTable::Ptr granted(ExportTable& t, std::uint64_t lo, std::vector<AccelId> ids,
                         std::uint64_t first = 600) {
  ExportTable::Ptr n = t.insert(handle(lo), 7);
  for (AccelId i : ids) {
    Alloc a{first + i};
    t.grant_range(*n, i, a.fn());
    t.add_importer(*n, i, 1);
  }
  return n;
}

}  // namespace

TEST_CASE("an export is in exp_xa until revoked, then in handle_invalid_xa until its cleanup ends",
          "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceAliasing);
  const UalinkHandle h = handle(0x1401);
  ExportTable::Ptr n = t.insert(h, 7);
  t.check();
  CHECK(t.size() == 1);
  CHECK(t.revoking() == 0);
  CHECK(t.taken(h.lo));
  CHECK(t.find(h) == n);
  CHECK(t.find(handle(h.lo, 0x9999)) == nullptr);  // lo and hi must both match
  CHECK(t.find_lo(h.lo) == n.get());
  CHECK(t.find_revoked(h) == nullptr);
  CHECK(n->bo() == 7);
  CHECK(n->refs() == 1);                                            // the table's
  CHECK_THROWS_AS(t.insert(handle(h.lo, 1), 8), std::logic_error);  // a handle lo is unique

  CHECK(t.revoke(h.lo, Time::ns(5)) == n);
  t.check();
  CHECK(n->revoked());
  CHECK(n->revoke_started() == Time::ns(5));
  CHECK(t.size() == 0);
  CHECK(t.revoking() == 1);
  CHECK(t.find(h) == nullptr);
  CHECK(t.find_lo(h.lo) == nullptr);
  CHECK(t.find_revoked(h) == n);
  CHECK(t.find_revoked(handle(h.lo, 0x9999)) == nullptr);
  CHECK(t.taken(h.lo));  // still: a new handle must not reuse it during cleanup
  CHECK_THROWS_AS(t.insert(h, 8), std::logic_error);
  CHECK(t.revoke(h.lo, Time::ns(6)) == nullptr);  // revoked once
  CHECK(n->revoke_started() == Time::ns(5));

  CHECK(t.put(*n));  // the table's reference was the last: cleanup
  CHECK(t.start_cleanup(*n).empty());
  CHECK(n->cleaning());
  t.check();
  t.remove(*n);
  t.check();
  CHECK(t.revoking() == 0);
  CHECK_FALSE(t.taken(h.lo));
  CHECK_THROWS_AS(t.remove(*n), std::logic_error);
}

TEST_CASE("a request's reference keeps a revoked export from cleanup, and none is taken after",
          "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr n = t.insert(handle(0x801), 7);
  t.hold(*n);
  CHECK(n->refs() == 2);
  CHECK_FALSE(t.put(*n));  // not revoked: never for cleanup
  t.hold(*n);
  t.revoke(0x801, Time::ns(1));
  CHECK_FALSE(t.put(*n));                         // the table's; the request still holds it
  CHECK_THROWS_AS(t.hold(*n), std::logic_error);  // revoked: nobody takes it again
  CHECK(t.put(*n));                               // the request's, the last
  CHECK(n->refs() == 0);
  CHECK_THROWS_AS(t.put(*n), std::logic_error);
}

TEST_CASE("an importer is recorded once, with the connection generation of its first grant",
          "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr a = t.insert(handle(0xC01), 7);
  ExportTable::Ptr b = t.insert(handle(0x401), 8);
  t.insert(handle(0x801), 9);  // no importer
  CHECK_FALSE(a->has_importers());
  t.add_importer(*a, 2, 3);
  t.add_importer(*a, 2, 5);  // a repeated grant: the first generation stays
  t.add_importer(*a, 6, 5);
  t.add_importer(*b, 1, 1);
  t.check();
  CHECK(a->importer(2));
  CHECK(a->generation(2) == 3);
  CHECK(a->generation(6) == 5);
  CHECK_FALSE(a->importer(1));
  CHECK(a->importer_count() == 2);
  const std::vector<ExportTable::Ptr> w = t.with_importers();
  REQUIRE(w.size() == 2);
  CHECK(w[0] == b);  // by handle lo
  CHECK(w[1] == a);
  CHECK(t.nodes().size() == 3);
}

TEST_CASE(
    "source-identification: a range per importer, a second request of the same importer is "
    "DUPLICATE, an empty window NOSPACE",
    "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceIdentification);
  ExportTable::Ptr n = t.insert(handle(0x401), 7);
  t.hold(*n);  // the request
  Alloc a{600};
  RangeGrant g = t.grant_range(*n, 1, a.fn());
  CHECK_FALSE(g.failure);
  CHECK(g.fresh);
  CHECK(g.window_page == 600);
  CHECK(t.range_of(*n, 1) == 600);
  t.check();  // a range before its importer: the request holds the node
  t.add_importer(*n, 1, 1);
  CHECK_FALSE(t.put(*n));
  t.check();

  g = t.grant_range(*n, 1, a.fn());
  CHECK(g.failure == FailReason::Duplicate);
  CHECK(a.calls == 1);  // nothing allocated for a duplicate
  Alloc none{std::nullopt};
  g = t.grant_range(*n, 2, none.fn());
  CHECK(g.failure == FailReason::NoSpace);
  CHECK_FALSE(t.range_of(*n, 2));
  Alloc b{900};
  g = t.grant_range(*n, 3, b.fn());
  CHECK(g.fresh);
  CHECK(t.range_of(*n, 3) == 900);
  CHECK(t.range_of(*n, 1) == 600);
  t.undo_range(*n, 3);  // its RSP could not be sent
  CHECK_FALSE(t.range_of(*n, 3));
  CHECK(n->ident_npa().size() == 1);
  CHECK_FALSE(n->shared_npa());
  t.check();
}

TEST_CASE("source-aliasing: one shared range, allocated once and handed to every importer",
          "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr n = t.insert(handle(0x401), 7);
  Alloc none{std::nullopt};
  CHECK(t.grant_range(*n, 1, none.fn()).failure == FailReason::NoSpace);
  Alloc a{700};
  RangeGrant g = t.grant_range(*n, 1, a.fn());
  CHECK(g.fresh);
  CHECK(g.window_page == 700);
  t.add_importer(*n, 1, 1);
  g = t.grant_range(*n, 2, a.fn());
  CHECK_FALSE(g.failure);
  CHECK_FALSE(g.fresh);  // the shared range again: nothing to map
  CHECK(g.window_page == 700);
  CHECK(a.calls == 1);
  t.add_importer(*n, 2, 1);
  CHECK(t.range_of(*n, 5) == 700);  // every importer's range is the shared one
  CHECK(n->ident_npa().empty());
  t.check();
  t.undo_range(*n, 2);
  CHECK_FALSE(n->shared_npa());
}

TEST_CASE(
    "cleanup snapshots the importers, expects a release from each it notifies, and frees "
    "the snapshot's ranges",
    "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceIdentification);
  ExportTable::Ptr n = granted(t, 0x401, {1, 3, 5});
  ExportTable::Ptr other = t.insert(handle(0x801), 8);
  CHECK_THROWS_AS(t.expect_release(*other, 1), std::logic_error);  // not in cleanup
  t.revoke(0x401, Time::ns(1));
  CHECK(t.put(*n));
  const std::vector<AccelId> orig = t.start_cleanup(*n);
  CHECK(orig == std::vector<AccelId>{1, 3, 5});
  CHECK_THROWS_AS(t.start_cleanup(*n), std::logic_error);  // once
  t.drop_stale(*n, 5);                                     // no longer ready at its generation
  CHECK_FALSE(n->importer(5));
  t.check();  // its range stays until cleanup frees the snapshot's
  t.expect_release(*n, 1);
  t.expect_release(*n, 3);
  t.check();
  CHECK(n->any_pending());
  CHECK(t.release(*n, 1));
  CHECK_FALSE(t.release(*n, 1));  // not expected any more
  CHECK_FALSE(t.release(*n, 2));  // never expected
  CHECK(n->pending(3));
  CHECK(n->any_pending());
  t.cancel_release(*n, 3);  // never answered
  CHECK_FALSE(n->any_pending());

  const std::vector<NpaRange> ranges = t.take_ranges(*n, orig);
  REQUIRE(ranges.size() == 3);
  CHECK(ranges[0].importer == 1);
  CHECK(ranges[0].window_page == 601);
  CHECK_FALSE(ranges[0].shared);
  CHECK(ranges[2].importer == 5);
  CHECK(ranges[2].window_page == 605);
  CHECK(n->ident_npa().empty());
  t.remove(*n);
  t.check();

  ExportTable s(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr m = granted(s, 0x401, {2, 4});
  s.revoke(0x401, Time::ns(1));
  s.put(*m);
  const std::vector<NpaRange> shared = s.take_ranges(*m, s.start_cleanup(*m));
  REQUIRE(shared.size() == 1);
  CHECK(shared[0].shared);
  CHECK(shared[0].window_page == 602);
  CHECK_FALSE(m->shared_npa());
}

TEST_CASE(
    "a connection reset drops the importer: its own range when source-identifying, the shared "
    "one only with no importer left, nothing cleanup has in its snapshot",
    "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceIdentification);
  ExportTable::Ptr n = granted(t, 0x401, {1, 2});
  auto d = t.drop_importer(*n, 1);
  REQUIRE(d);
  CHECK(d->mine);
  REQUIRE(d->range);
  CHECK(d->range->importer == 1);
  CHECK(d->range->window_page == 601);
  CHECK_FALSE(d->range->shared);
  CHECK_FALSE(n->importer(1));
  CHECK_FALSE(t.range_of(*n, 1));
  CHECK(t.range_of(*n, 2) == 602);
  CHECK_FALSE(t.drop_importer(*n, 1));  // not an importer: nothing
  t.check();

  ExportTable a(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr m = granted(a, 0x401, {1, 2});
  d = a.drop_importer(*m, 1);
  REQUIRE(d);
  CHECK(d->mine);
  CHECK_FALSE(d->range);  // importer 2 still uses the shared range
  CHECK(m->shared_npa() == 601);
  d = a.drop_importer(*m, 2);
  REQUIRE(d);
  REQUIRE(d->range);
  CHECK(d->range->shared);
  CHECK(d->range->window_page == 601);
  CHECK_FALSE(m->shared_npa());
  a.check();

  // In cleanup: the importer goes and no longer owes a release; the pin and the range are
  // cleanup's to undo.
  ExportTable::Ptr c = granted(t, 0x801, {3, 4}, 700);
  t.revoke(0x801, Time::ns(1));
  t.put(*c);
  t.start_cleanup(*c);
  t.expect_release(*c, 3);
  t.expect_release(*c, 4);
  d = t.drop_importer(*c, 3);
  REQUIRE(d);
  CHECK_FALSE(d->mine);
  CHECK_FALSE(d->range);
  CHECK_FALSE(c->importer(3));
  CHECK_FALSE(c->pending(3));
  CHECK(c->pending(4));
  CHECK(t.range_of(*c, 3) == 703);
  t.check();
}

TEST_CASE("the export table's check names a broken rule", "[driver][export_table]") {
  ExportTable t(kAccels, NpaAddrMode::SourceIdentification);
  ExportTable::Ptr n = t.insert(handle(0x401), 7);
  t.add_importer(*n, 2, 0);  // a connection's generations start at 1
  CHECK_THROWS_AS(t.check(), std::logic_error);

  ExportTable u(kAccels, NpaAddrMode::SourceIdentification);
  ExportTable::Ptr m = u.insert(handle(0x401), 7);
  Alloc a{600};
  u.grant_range(*m, 1, a.fn());  // a range, no importer, nobody holding the node
  CHECK_THROWS_AS(u.check(), std::logic_error);

  ExportTable v(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr k = v.insert(handle(0x401), 7);
  v.grant_range(*k, 1, a.fn());
  CHECK_THROWS_AS(v.check(), std::logic_error);

  ExportTable w(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr c = granted(w, 0x401, {1});
  w.revoke(0x401, Time::ns(1));
  w.put(*c);
  w.start_cleanup(*c);
  w.expect_release(*c, 1);
  w.check();
  w.expect_release(*c, 6);  // never an importer
  CHECK_THROWS_AS(w.check(), std::logic_error);
}

TEST_CASE("the export table's digest: each map by handle lo, whatever the order of insertion",
          "[driver][export_table]") {
  // The format the driver's setup digests are made of (tests/sc/test_setup.cpp).
  ExportTable t(kAccels, NpaAddrMode::SourceAliasing);
  ExportTable::Ptr b = granted(t, 0x801, {3}, 700);
  t.insert(handle(0x401, 0x11), 7);
  t.revoke(0x801, Time::ns(1));
  t.put(*b);
  Digest got;
  t.digest(got);

  Digest want;
  want.add("exports");
  want.add(0x401).add(0x11).add(7).add(1).add(false).add(false);
  want.add(UINT64_MAX);         // no importers
  want.add(UINT64_MAX);         // no releases expected
  want.add(0).add(UINT64_MAX);  // no shared range, no ranges per importer
  want.add("revoking");
  want.add(0x801).add(0xABCD).add(7).add(0).add(true).add(false);
  want.add(3).add(UINT64_MAX).add(1);  // importer 3 at generation 1
  want.add(UINT64_MAX);
  want.add(703 + 1).add(UINT64_MAX);
  CHECK(got.value() == want.value());

  ExportTable u(kAccels, NpaAddrMode::SourceAliasing);
  u.insert(handle(0x401, 0x11), 7);
  ExportTable::Ptr c = granted(u, 0x801, {3}, 700);
  u.revoke(0x801, Time::ns(1));
  u.put(*c);
  Digest same;
  u.digest(same);
  CHECK(same.value() == got.value());

  u.clear();
  ExportTable empty(kAccels, NpaAddrMode::SourceAliasing);
  Digest cleared, fresh;
  u.digest(cleared);
  empty.digest(fresh);
  CHECK(cleared.value() == fresh.value());
  CHECK(u.size() == 0);
  CHECK(u.revoking() == 0);
}
