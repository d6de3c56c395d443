// The driver's import table on its own: NOT_READY, PENDING, READY and TEARDOWN, which answers
// a node takes, what a repeated import, a revoke and a reset may do.
#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>
#include <vector>

#include "driver_model/import_table.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "tests/unit/steps_scheduler.hpp"

using namespace podsim;
using namespace podsim::driver;

namespace {

using test::Steps;

Task<void> wait_for_answer(ImportTable::Ptr n, Scheduler& s, int& woken) {
  const bool answered = co_await n->answered().wait(s);
  if (answered) ++woken;
}

// Exporter 3's handle.
UalinkHandle handle(std::uint64_t lo = 0x1403, std::uint64_t hi = 0xABCD) {
  return UalinkHandle{lo, hi};
}

// A READY node for `h`, answered with window page `page`.
ImportTable::Ptr ready(ImportTable& t, const UalinkHandle& h, std::uint64_t bo,
                       std::uint32_t page = 600) {
  ImportTable::Ptr n = t.insert(h);
  t.respond(h.lo, h.exporter(), page, 16, false);
  t.ready(*n, bo);
  return n;
}

}  // namespace

TEST_CASE(
    "a first import files a NOT_READY node, a second loses the insert race, and a failed "
    "import takes out only its own node",
    "[driver][import_table]") {
  ImportTable t;
  const UalinkHandle h = handle();
  CHECK(t.state(h.lo) == ImportState::Teardown);  // no node
  CHECK_FALSE(t.cached(h, true));                 // a first import
  ImportTable::Ptr n = t.insert(h);
  REQUIRE(n);
  t.check();
  CHECK(n->state() == ImportState::NotReady);
  CHECK(t.state(h.lo) == ImportState::NotReady);
  CHECK(t.contains(h.lo));
  CHECK(t.size() == 1);
  CHECK(t.insert(h) == nullptr);
  CHECK(t.insert(handle(h.lo, 0x9999)) == nullptr);  // by lo
  t.abandon(n);
  CHECK_FALSE(t.contains(h.lo));
  ImportTable::Ptr again = t.insert(h);
  REQUIRE(again);
  t.abandon(n);  // the old import's failure: the new node stays
  CHECK(t.contains(h.lo));
  CHECK(t.size() == 1);
  t.check();
}

TEST_CASE(
    "an answer is taken by a node waiting for it, and only by one (but B5's RSP and FAIL "
    "overwrite)",
    "[driver][import_table]") {
  ImportTable t;
  const UalinkHandle h = handle();
  CHECK_FALSE(t.respond(h.lo, 3, 600, 16, false));  // no node: unsolicited
  CHECK_FALSE(t.fail(h.lo, FailReason::NoSpace, false));
  ImportTable::Ptr n = t.insert(h);
  CHECK(t.respond(h.lo, 3, 600, 16, false));
  CHECK(n->state() == ImportState::Pending);
  CHECK(n->npa_page() == (600 | (3ull << kNpaWindowPageBits)));
  CHECK(n->size_pages() == 16);
  CHECK_FALSE(t.respond(h.lo, 3, 700, 32, false));  // answered already
  CHECK(n->npa_page() == (600 | (3ull << kNpaWindowPageBits)));
  CHECK_FALSE(t.fail(h.lo, FailReason::Error, false));
  CHECK_FALSE(n->fail());
  CHECK_FALSE(t.respond(h.lo, 3, 700, 32, true));  // B5: still unsolicited, but it overwrites
  CHECK(n->npa_page() == (700 | (3ull << kNpaWindowPageBits)));
  CHECK(n->size_pages() == 32);
  CHECK(n->state() == ImportState::Pending);
  t.check();

  const UalinkHandle g = handle(0x2403);
  ImportTable::Ptr m = t.insert(g);
  CHECK(t.fail(g.lo, FailReason::Duplicate, false));
  CHECK(m->state() == ImportState::Pending);
  CHECK(m->fail() == FailReason::Duplicate);
  CHECK_FALSE(t.fail(g.lo, FailReason::NoSpace, false));
  CHECK(m->fail() == FailReason::Duplicate);
  t.check();

  // B5: an unsolicited NPA_FAIL overwrites the reason of a node answered already, PENDING or
  // READY, and changes nothing else: the READY node keeps its buffer and can be revoked.
  CHECK_FALSE(t.fail(h.lo, FailReason::NoSpace, true));
  CHECK(n->fail() == FailReason::NoSpace);
  CHECK(n->state() == ImportState::Pending);
  t.ready(*n, 9);  // an RSP answered it: the overwritten reason does not stop it
  CHECK_FALSE(t.fail(h.lo, FailReason::Error, true));
  CHECK(n->fail() == FailReason::Error);
  CHECK(n->state() == ImportState::Ready);
  CHECK(n->bo() == 9);
  CHECK(t.cached(h, true)->err == Errno::Ok);
  t.check();
}

TEST_CASE(
    "what an answered import returns: the failure's errno, EINVAL for an unusable NPA or "
    "size or a reset meanwhile",
    "[driver][import_table]") {
  CHECK(errno_of(FailReason::NoSpace) == Errno::NoSpc);
  CHECK(errno_of(FailReason::InvalidHandle) == Errno::Inval);
  CHECK(errno_of(FailReason::Duplicate) == Errno::Inval);
  CHECK(errno_of(FailReason::Error) == Errno::Inval);
  CHECK(ImportTable::usable(600, 1));
  CHECK_FALSE(ImportTable::usable(0, 1));
  CHECK_FALSE(ImportTable::usable(600, 0));
  CHECK_FALSE(ImportTable::usable(3ull << kNpaWindowPageBits, 1));  // window page 0

  ImportTable t;
  auto answered = [&](std::uint64_t lo, std::uint32_t page, std::uint32_t size) {
    ImportTable::Ptr n = t.insert(handle(lo));
    t.respond(lo, 3, page, size, false);
    return ImportTable::outcome(*n);
  };
  CHECK(answered(0x1403, 600, 16) == Errno::Ok);
  CHECK(answered(0x2403, 0, 16) == Errno::Inval);
  CHECK(answered(0x3403, 600, 0) == Errno::Inval);
  ImportTable::Ptr f = t.insert(handle(0x4403));
  t.fail(0x4403, FailReason::NoSpace, false);
  CHECK(ImportTable::outcome(*f) == Errno::NoSpc);
  ImportTable::Ptr g = t.insert(handle(0x5403));
  t.fail(0x5403, FailReason::InvalidHandle, false);
  CHECK(ImportTable::outcome(*g) == Errno::Inval);
  ImportTable::Ptr r = t.insert(handle(0x6404));
  t.respond(0x6404, 4, 600, 16, false);
  t.tear_down(4);
  CHECK(ImportTable::outcome(*r) == Errno::Inval);
}

TEST_CASE("only an answered node becomes READY, and a repeated import gets its buffer or waits",
          "[driver][import_table]") {
  ImportTable t;
  const UalinkHandle h = handle();
  ImportTable::Ptr n = t.insert(h);
  CHECK_THROWS_AS(t.ready(*n, 9), std::logic_error);  // not answered
  auto c = t.cached(h, true);
  REQUIRE(c);
  CHECK(c->err == Errno::Again);  // NOT_READY
  t.respond(h.lo, 3, 600, 16, false);
  CHECK(t.cached(h, true)->err == Errno::Again);  // PENDING
  t.ready(*n, 9);
  t.check();
  CHECK(n->state() == ImportState::Ready);
  CHECK(n->bo() == 9);
  CHECK_THROWS_AS(t.ready(*n, 10), std::logic_error);  // once
  c = t.cached(h, true);
  REQUIRE(c);
  CHECK(c->err == Errno::Ok);
  CHECK(c->bo == 9);
  CHECK(t.cached(handle(h.lo, 0x9999), true)->err == Errno::Inval);  // hi checked
  CHECK(t.cached(handle(h.lo, 0x9999), false)->err == Errno::Ok);    // B5: hi unchecked

  const UalinkHandle g = handle(0x2403);
  ImportTable::Ptr f = t.insert(g);
  t.fail(g.lo, FailReason::Error, false);
  CHECK_THROWS_AS(t.ready(*f, 11), std::logic_error);  // a failed import has no buffer
}

TEST_CASE("NPA_REVOKE takes a node whose hi matches, in any state, and wakes its waiter",
          "[driver][import_table]") {
  ImportTable t;
  const UalinkHandle h = handle();
  ImportTable::Ptr n = t.insert(h);
  t.respond(h.lo, 3, 600, 16, false);
  t.ready(*n, 9);
  CHECK(t.revoke(handle(h.lo, 0x9999)) == nullptr);  // hi differs
  CHECK(t.find(handle(h.lo, 0x9999)) == nullptr);
  CHECK(t.find(h) == n.get());
  CHECK(n->state() == ImportState::Ready);
  CHECK(t.revoke(h) == n);
  CHECK(n->state() == ImportState::Teardown);
  CHECK_FALSE(t.contains(h.lo));
  CHECK(t.revoke(h) == nullptr);
  t.check();

  // Not READY yet: a PENDING node goes with no buffer; a NOT_READY one's waiter is woken and
  // finds it torn down (EINVAL).
  ImportTable::Ptr p = t.insert(handle(0x2403));
  t.respond(0x2403, 3, 600, 16, false);
  CHECK(t.revoke(handle(0x2403)) == p);
  CHECK(p->state() == ImportState::Teardown);
  CHECK(p->bo() == 0);
  Steps s;
  int woken = 0;
  ImportTable::Ptr w = t.insert(handle(0x3403));
  TaskRunner r;
  r.run(wait_for_answer(w, s, woken));
  CHECK(t.revoke(handle(0x3403)) == w);
  s.run();
  CHECK(woken == 1);
  CHECK(ImportTable::outcome(*w) == Errno::Inval);
  CHECK(t.size() == 0);
  t.check();
}

TEST_CASE("an import remembers the connection generation its request went out on",
          "[driver][import_table]") {
  ImportTable t;
  ImportTable::Ptr a = t.insert(handle(0x2403));  // exporter 3
  ImportTable::Ptr b = t.insert(handle(0x1403));
  t.insert(handle(0x3403));  // exporter 3's too, its request not sent yet: never older
  ImportTable::Ptr d = t.insert(handle(0x1404));  // exporter 4
  CHECK(a->generation() == 0);
  t.sent(*a, 1);
  t.sent(*b, 2);
  t.sent(*d, 1);
  CHECK(a->generation() == 1);
  CHECK(t.older_than(3, 1).empty());
  const std::vector<const ImportNode*> old = t.older_than(3, 3);
  REQUIRE(old.size() == 2);
  CHECK(old[0] == b.get());  // by handle lo
  CHECK(old[1] == a.get());
  REQUIRE(t.older_than(3, 2).size() == 1);
  CHECK(t.older_than(3, 2)[0] == a.get());
  CHECK(t.older_than(4, 2).size() == 1);
}

TEST_CASE(
    "a connection reset tears down each node of that exporter, whatever its state, and "
    "wakes its waiters",
    "[driver][import_table]") {
  Steps s;
  ImportTable t;
  ImportTable::Ptr waiting = t.insert(handle(0x1403));
  ImportTable::Ptr done = ready(t, handle(0x2403), 9);
  ImportTable::Ptr other = t.insert(handle(0x1404));  // exporter 4
  int woken = 0;
  {
    TaskRunner r;
    r.run(wait_for_answer(waiting, s, woken));
    r.run(wait_for_answer(other, s, woken));
    CHECK(t.waiting() == 2);
    const std::vector<ImportTable::Ptr> gone = t.tear_down(3);
    CHECK(gone.size() == 2);
    s.run();
    CHECK(woken == 1);
    CHECK(t.waiting() == 1);  // exporter 4's
    r.cancel_all();
  }
  CHECK(waiting->state() == ImportState::Teardown);
  CHECK(done->state() == ImportState::Teardown);
  CHECK(other->state() == ImportState::NotReady);
  CHECK(t.size() == 1);
  CHECK(t.contains(0x1404));
  t.check();
}

TEST_CASE("an answer wakes the import waiting for it", "[driver][import_table]") {
  Steps s;
  ImportTable t;
  ImportTable::Ptr a = t.insert(handle(0x1403));
  ImportTable::Ptr b = t.insert(handle(0x2403));
  int woken = 0;
  TaskRunner r;
  r.run(wait_for_answer(a, s, woken));
  r.run(wait_for_answer(b, s, woken));
  t.respond(0x1403, 3, 600, 16, false);
  s.run();
  CHECK(woken == 1);
  t.fail(0x2403, FailReason::Error, false);
  s.run();
  CHECK(woken == 2);
  CHECK(t.waiting() == 0);
}

TEST_CASE("the import table's digest lists the nodes by handle lo, and a device reset empties it",
          "[driver][import_table]") {
  ImportTable t, u, empty;
  ready(t, handle(0x2403, 0x22), 9, 700);
  t.insert(handle(0x1404, 0x11));
  u.insert(handle(0x1404, 0x11));
  ready(u, handle(0x2403, 0x22), 9, 700);
  Digest got, same;
  t.digest(got);
  u.digest(same);
  CHECK(got.value() == same.value());

  Digest want;
  want.add("imports");
  want.add(0x1404).add(0x11).add(0).add(0).add(0).add(0).add(0);  // NOT_READY, nothing yet
  want.add(0x2403).add(0x22).add(2).add(700 | (3ull << kNpaWindowPageBits)).add(16).add(9).add(0);
  CHECK(got.value() == want.value());

  t.clear();
  CHECK(t.size() == 0);
  Digest cleared, fresh;
  t.digest(cleared);
  empty.digest(fresh);
  CHECK(cleared.value() == fresh.value());
}
