#include "sim/pod/collective_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>

#include "sim/core/byte_io.hpp"
#include "sim/core/json_write.hpp"
#include "sim/core/stats.hpp"

namespace podsim {

CollectiveRun::CollectiveRun(const PodConfig& cfg) : cfg_(cfg) {
  const CollectiveConfig& k = cfg.workload.collective;
  gpus_ = k.gpus;
  if (gpus_.empty())
    for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g)
      gpus_.push_back(g);
  const auto n = static_cast<std::uint32_t>(gpus_.size());
  std::uint32_t root = 0;
  for (std::uint32_t r = 0; r < n; ++r)
    if (k.root && gpus_[r] == *k.root) root = r;
  std::vector<std::uint64_t> blocks;
  for (Bytes b : k.send_bytes)
    blocks.push_back(b.count());
  // all_to_all_v: one size, send_bytes (reported as the most a participant sends).
  std::uint64_t most = 0;
  for (std::uint32_t i = 0; i < n && !blocks.empty(); ++i) {
    std::uint64_t row = 0;
    for (std::uint32_t j = 0; j < n; ++j)
      row += blocks[static_cast<std::size_t>(i) * n + j];
    most = std::max(most, row);
  }
  const std::vector<Bytes> sizes =
      k.op == coll::Op::AllToAllV ? std::vector<Bytes>{Bytes(most)} : k.the_sizes();
  for (Bytes b : sizes) {
    coll::Shape s;
    s.op = k.op;
    s.alg = k.the_algorithm();
    s.n = n;
    s.bytes = b.count();
    s.piece = k.chunk_size.count();
    s.root = root;
    if (k.op == coll::Op::AllToAllV) s.blocks = blocks;
    shapes_.push_back(s);
  }
  prepare(false);
  warmup_ = k.warmup_iterations;
  iterations_ = k.iterations;
  calls_.assign(shapes_.size(), std::vector<Call>(warmup_ + iterations_));
  checked_.assign(shapes_.size(), 0);
  wrong_.assign(shapes_.size(), 0);
  checks_.assign(shapes_.size(), 0);
  for (std::size_t i = 0; i < shapes_.size(); ++i) {
    const std::string at = fmt::format("size_{}.", shapes_[i].bytes);
    auto add = [&](const char* name, const char* unit, const char* desc, double Row::*field) {
      formulas_.push_back(std::make_unique<Formula>(stats_, at + name, unit, desc,
                                                    [this, i, field] { return rows()[i].*field; }));
    };
    add("time", "us", "mean time of a timed call at this size: its first start to its last end",
        &Row::time_us);
    add("algbw", "GB/s", "algorithm bandwidth at this size: its bytes over the mean time",
        &Row::algbw_gbps);
    add("busbw", "GB/s",
        "bus bandwidth at this size: algorithm bandwidth x the op's factor (nccl-tests')",
        &Row::busbw_gbps);
  }
}

CollectiveRun::CollectiveRun(const PodConfig& cfg, std::string name,
                             std::vector<std::uint32_t> gpus, const std::vector<coll::Shape>& calls,
                             bool send)
    : cfg_(cfg), name_(std::move(name)), gpus_(std::move(gpus)) {
  // One program per distinct shape; each call names its shape.
  for (const coll::Shape& c : calls) {
    std::size_t i = 0;
    while (i < shapes_.size() &&
           !(shapes_[i].op == c.op && shapes_[i].alg == c.alg && shapes_[i].bytes == c.bytes &&
             shapes_[i].root == c.root && shapes_[i].blocks == c.blocks))
      ++i;
    if (i == shapes_.size()) shapes_.push_back(c);
    call_shape_.push_back(i);
  }
  prepare(send);
}

void CollectiveRun::prepare(bool send) {
  const auto n = static_cast<std::uint32_t>(gpus_.size());
  for (const coll::Shape& s : shapes_)
    bodies_.push_back(send ? coll::build_send(s) : coll::build(s));
  std::uint32_t flags = 0;
  for (const auto& body : bodies_)
    for (const coll::Program& p : body)
      flags = std::max(flags, p.flag_slots());
  layout_ = coll::Layout::covering(shapes_, flags);
  for (std::uint32_t r = 0; r < n; ++r)
    barriers_.push_back(coll::barrier(n, r));
  peers_.resize(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    std::set<std::uint32_t> all;
    auto add = [&](const coll::Program& p) {
      for (std::uint32_t q : p.peers())
        if (q != r) all.insert(q);
    };
    add(barriers_[r]);
    for (const auto& body : bodies_)
      add(body[r]);
    peers_[r].assign(all.begin(), all.end());
  }
}

std::uint32_t CollectiveRun::rank_of(std::uint32_t gpu) const {
  return static_cast<std::uint32_t>(std::find(gpus_.begin(), gpus_.end(), gpu) - gpus_.begin());
}

// workload.collective's names as they were; a model trace group's carry the group's name.
std::string CollectiveRun::name(const char* what, std::int64_t gpu) const {
  const std::string w(what);
  if (name_.empty()) return gpu < 0 ? w : fmt::format("{}{}", w, gpu);
  return gpu < 0 ? fmt::format("{}.{}", w, name_) : fmt::format("{}.{}.{}", w, name_, gpu);
}

std::vector<std::string> CollectiveRun::windows(std::uint32_t rank) const {
  std::vector<std::string> w(participants(), "");
  w[rank] = name("local");
  for (std::uint32_t q : peers_[rank])
    w[q] = name("m", gpus_[q]);
  return w;
}

void CollectiveRun::setup_steps(std::vector<Step>& steps) const {
  const auto n = participants();
  std::vector<std::vector<std::uint32_t>> importers(n);  // by exporter
  for (std::uint32_t r = 0; r < n; ++r)
    for (std::uint32_t q : peers_[r])
      importers[q].push_back(r);
  for (std::uint32_t r = 0; r < n; ++r) {
    const std::uint32_t g = gpus_[r];
    const std::string h = name("h", g);
    steps.push_back(make_step(g, AllocStep{Bytes(layout_.window), name("win"), AllocDomain::Vram}));
    steps.push_back(make_step(g, MapStep{MapStep::From::Buffer, name("win"), name("local")}));
    steps.push_back(make_step(g, ExportStep{name("win"), h}));
    for (std::uint32_t q : importers[r])
      steps.push_back(make_step(g, SendHandleStep{h, gpus_[q], h}));
    for (std::uint32_t q : peers_[r]) {
      const std::uint32_t e = gpus_[q];
      Step& imp = steps.emplace_back(make_step(g, ImportStep{name("h", e), name("fd", e)}));
      imp.common.retries = 1000;  // a concurrent handshake with the same peer answers EAGAIN
      imp.common.retry_interval = Time::us(10);
      steps.push_back(make_step(g, MapStep{MapStep::From::Fd, name("fd", e), name("m", e)}));
      steps.push_back(make_step(g, CloseFdStep{name("fd", e)}));
    }
  }
}

std::vector<Step> CollectiveRun::steps() const {
  std::vector<Step> setup;
  setup_steps(setup);
  // Each participant's setup, its barrier and its collective (one GPU's steps run in list
  // order).
  std::vector<Step> steps;
  for (std::uint32_t r = 0; r < participants(); ++r) {
    const std::uint32_t g = gpus_[r];
    for (const Step& s : setup)
      if (s.common.gpu == g) steps.push_back(s);
    steps.push_back(make_step(g, BarrierStep{"mapped"}));
    steps.push_back(make_step(g, CollectiveStep{r}));
  }
  return steps;
}

void CollectiveRun::note_call(std::uint32_t rank, std::size_t size, std::uint32_t call, Time start,
                              Time end) {
  records_.push_back({gpus_[rank], call, size, start, end});
  Call& c = calls_[size][call];
  c.start = std::min(c.start, start);
  c.end = std::max(c.end, end);
  ++c.ended;
}

void CollectiveRun::note_check(std::size_t size, std::uint64_t checked, std::uint64_t wrong) {
  checked_[size] += checked;
  wrong_[size] += wrong;
  ++checks_[size];
}

void CollectiveRun::pack(ByteWriter& out) const {
  for (const auto& size : calls_)
    for (const Call& c : size) {
      out.put(c.start.as_ps());
      out.put(c.end.as_ps());
      out.put(c.ended);
    }
  for (std::size_t i = 0; i < shapes_.size() && !calls_.empty(); ++i) {
    out.put(checked_[i]);
    out.put(wrong_[i]);
    out.put(checks_[i]);
  }
  out.put(static_cast<std::uint64_t>(records_.size()));
  for (const CallRecord& r : records_) {
    out.put(r.gpu);
    out.put(r.call);
    out.put(static_cast<std::uint64_t>(r.size));
    out.put(r.start.as_ps());
    out.put(r.end.as_ps());
  }
}

void CollectiveRun::merge(ByteReader& in) {
  for (auto& size : calls_)
    for (Call& c : size) {
      c.start = std::min(c.start, Time::ps(in.get<std::int64_t>()));
      c.end = std::max(c.end, Time::ps(in.get<std::int64_t>()));
      c.ended += in.get<std::uint32_t>();
    }
  for (std::size_t i = 0; i < shapes_.size() && !calls_.empty(); ++i) {
    checked_[i] += in.get<std::uint64_t>();
    wrong_[i] += in.get<std::uint64_t>();
    checks_[i] += in.get<std::uint32_t>();
  }
  const auto n = in.get<std::uint64_t>();
  for (std::uint64_t k = 0; k < n; ++k) {
    CallRecord r;
    r.gpu = in.get<std::uint32_t>();
    r.call = in.get<std::uint32_t>();
    r.size = in.get<std::uint64_t>();
    r.start = Time::ps(in.get<std::int64_t>());
    r.end = Time::ps(in.get<std::int64_t>());
    if (r.size >= shapes_.size())
      throw std::runtime_error("partitioned run: a collective call of a size there is not");
    records_.push_back(r);
  }
  // As they ended, whichever rank ran them (same-time ends by GPU; one rank keeps those in the
  // order they ran: only the timeline reads them, and it is not written split).
  std::stable_sort(records_.begin(), records_.end(), [](const CallRecord& a, const CallRecord& b) {
    return a.end != b.end ? a.end < b.end : a.gpu < b.gpu;
  });
}

std::vector<CollectiveRun::Row> CollectiveRun::rows() const {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < shapes_.size(); ++i) {
    Row row;
    row.bytes = shapes_[i].bytes;
    double sum = 0, lo = 0, hi = 0;
    for (std::uint32_t c = warmup_; c < warmup_ + iterations_; ++c) {
      const Call& call = calls_[i][c];
      if (call.ended != participants()) continue;
      const double us = (call.end - call.start).as_us();
      lo = row.calls == 0 ? us : std::min(lo, us);
      hi = std::max(hi, us);
      sum += us;
      ++row.calls;
    }
    if (row.calls) {
      row.time_us = sum / row.calls;
      row.min_us = lo;
      row.max_us = hi;
      // Bytes per microsecond are MB/s: / 1e3 for GB/s.
      row.algbw_gbps = row.time_us > 0 ? static_cast<double>(row.bytes) / row.time_us / 1e3 : 0;
      row.busbw_gbps = row.algbw_gbps * shapes_[i].bus_factor();
    }
    row.checked = checks_[i] == participants();
    row.elements_checked = checked_[i];
    row.wrong = wrong_[i];
    rows.push_back(row);
  }
  return rows;
}

std::string CollectiveRun::op_name() const {
  return std::string(
      enum_name(std::span<const EnumName<coll::Op>>(coll::kOpNames), cfg_.workload.collective.op));
}
std::string CollectiveRun::algorithm_name() const {
  return std::string(enum_name(std::span<const EnumName<coll::Algorithm>>(coll::kAlgorithmNames),
                               cfg_.workload.collective.the_algorithm()));
}

std::string CollectiveRun::csv() const {
  std::string out =
      "op,algorithm,participants,bytes,elements,calls,time_us,min_us,max_us,algbw_GBps,"
      "busbw_GBps,elements_checked,wrong\n";
  for (const Row& r : rows())
    out += fmt::format("{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{},{}\n", op_name(),
                       algorithm_name(), participants(), r.bytes, r.bytes / 4, r.calls, r.time_us,
                       r.min_us, r.max_us, r.algbw_gbps, r.busbw_gbps,
                       r.checked ? std::to_string(r.elements_checked) : "",
                       r.checked ? std::to_string(r.wrong) : "");
  return out;
}

std::string CollectiveRun::json(const std::string& failed_text) const {
  boost::json::object doc;
  if (!failed_text.empty()) doc["run_failed"] = failed_text;
  doc["op"] = op_name();
  doc["algorithm"] = algorithm_name();
  boost::json::array gpus;
  for (std::uint32_t g : gpus_)
    gpus.push_back(g);
  doc["gpus"] = std::move(gpus);
  doc["data_type"] = "float32";
  if (reduces())
    doc["reduction"] = "sum";
  else
    doc["reduction"] = nullptr;
  doc["chunk_size_bytes"] = cfg_.workload.collective.chunk_size.count();
  doc["window_bytes"] = layout_.window;
  doc["bus_factor"] = shapes_.empty() ? 1.0 : shapes_[0].bus_factor();
  boost::json::array sizes;
  for (const Row& r : rows()) {
    boost::json::object o;
    o["bytes"] = r.bytes;
    o["elements"] = r.bytes / 4;
    o["calls"] = r.calls;
    o["time_us"] = r.time_us;
    o["min_us"] = r.min_us;
    o["max_us"] = r.max_us;
    o["algbw_GBps"] = r.algbw_gbps;
    o["busbw_GBps"] = r.busbw_gbps;
    if (r.checked) {
      o["elements_checked"] = r.elements_checked;
      o["wrong"] = r.wrong;
    } else {
      o["elements_checked"] = nullptr;
      o["wrong"] = nullptr;
    }
    sizes.push_back(std::move(o));
  }
  doc["sizes"] = std::move(sizes);
  return config::to_pretty_json(doc);
}

}  // namespace podsim
