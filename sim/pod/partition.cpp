#include "sim/pod/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/packet_wire.hpp"

namespace podsim {

namespace {

enum class Record : std::uint8_t { Packet = 1, Credits = 2, Note = 3 };

// A packet's and a credit return's record, each appended and read whole (a packet's own bytes,
// sim/kernel/packet_wire, follow its record). Packed: no padding travels.
struct [[gnu::packed]] PacketRecord {
  Record record;
  std::uint32_t link;
  std::uint8_t to;
  std::int64_t head;
  std::int64_t sent;  // when it was sent: the far end acts as it would have then
  std::uint64_t id;
  AccelId src;
};
struct [[gnu::packed]] CreditRecord {
  Record record;
  std::uint32_t link;
  std::uint8_t to;
  std::uint8_t tc;
  std::uint64_t tl;
  std::int64_t at;
};

}  // namespace

PartitionPlan plan_partition(const PodConfig& cfg, std::uint32_t ranks) {
  PartitionPlan plan;
  plan.ranks = ranks;
  const std::uint32_t n = cfg.pod.gpus;
  // By host: a host's GPUs are activated together, so they stay on one rank.
  const std::uint32_t per_host = cfg.pod.gpus_per_host;
  const std::uint32_t hosts = (n + per_host - 1) / per_host;
  for (std::uint32_t g = 0; g < n; ++g)
    plan.gpu.push_back(
        static_cast<std::uint32_t>(static_cast<std::uint64_t>(g / per_host) * ranks / hosts));
  const FabricConfig& f = cfg.fabric;
  for (std::uint32_t p = 0; p < f.planes; ++p) {
    std::vector<std::uint32_t> sw;
    if (f.topology == Topology::SingleSwitch) {
      sw.push_back(p % ranks);
    } else {
      const std::uint32_t per_leaf = f.leaf_spine.gpus_per_leaf;
      const std::uint32_t leaves = (n + per_leaf - 1) / per_leaf;
      for (std::uint32_t l = 0; l < leaves; ++l) {
        const std::uint32_t first = l * per_leaf;
        const std::uint32_t last = std::min(n, first + per_leaf) - 1;
        sw.push_back(plan.gpu[(first + last) / 2]);
      }
      const std::uint32_t spines = leaves > 1 ? f.leaf_spine.spines : 0;
      for (std::uint32_t s = 0; s < spines; ++s)
        sw.push_back((p + s) % ranks);
    }
    plan.switch_.push_back(std::move(sw));
  }
  return plan;
}

Partition::Partition(RankComm& comm, const PartitionPlan& plan, const FabricConfig& cfg,
                     Fabric& fabric, PacketPool& pool, HostNet& net, Dispatcher& events)
    : comm_(comm), plan_(plan), pool_(pool), net_(net), events_(events), out_(comm.ranks()) {
  const std::uint32_t me = comm.rank();
  // From a packet leaving one end (an egress commits it: Link::send, now) to the first thing
  // it changes at the other: its head arrives after the sender's transmit delay (a port's
  // pipeline and SerDes: a switch spends that part of its latency at its output) and the
  // flight; a switch acts on it the rest of its latency later, a GPU port once it is through
  // SerDes, FEC and pipeline. Credits: the flight and both ends' data-link processing.
  const Time switch_out = std::min(cfg.switch_.latency, cfg.port.tx_latency());
  auto packet_delay = [&](bool from_gpu, bool to_gpu, const Link& l) {
    return (from_gpu ? cfg.port.tx_latency() : switch_out) + l.flight_time() +
           (to_gpu ? cfg.port.rx_latency() : cfg.switch_.latency - switch_out);
  };
  Time shortest = Time::max();
  std::string what;  // the path that takes it, and the keys that set it
  auto consider = [&](Time t, const char* path) {
    if (t < shortest) {
      shortest = t;
      what = path;
    }
  };
  std::uint32_t id = 0;
  for (std::uint32_t p = 0; p < fabric.planes(); ++p)
    for (const FabricPlane::LinkEnds& e : fabric.plane(p).link_ends()) {
      std::uint32_t owner[2];
      for (int side = 0; side < 2; ++side)
        owner[side] =
            e.gpu[side] ? plan.gpu.at(e.index[side]) : plan.switch_.at(p).at(e.index[side]);
      Cut cut{
          e.link, owner[0] == me ? owner[1] : owner[0], owner[0] == me || owner[1] == me, {}, {}};
      if (owner[0] != owner[1]) {
        ++cut_count_;
        const bool gpu_end = e.gpu[0] || e.gpu[1];
        consider(packet_delay(e.gpu[0], e.gpu[1], *e.link),
                 gpu_end ? "a packet from a GPU port to a switch (fabric.port.pipeline_latency, "
                           "serdes_latency, fabric.link, fabric.switch.latency)"
                         : "a packet between switches (fabric.link, fabric.switch.latency)");
        consider(packet_delay(e.gpu[1], e.gpu[0], *e.link),
                 gpu_end ? "a packet from a switch to a GPU port (fabric.link, "
                           "fabric.port.serdes_latency, fec_latency, pipeline_latency)"
                         : "a packet between switches (fabric.link, fabric.switch.latency)");
        consider(e.link->credit_delay(),
                 "a credit return (fabric.link, fabric.port.pipeline_latency, serdes_latency, "
                 "fec_latency)");
      }
      // What would reach an end another rank simulates goes there (an end not simulated here
      // may not be built here: another rank's GPU). With neither end here nothing reaches
      // either.
      if (owner[0] != me) e.link->cut(Link::A, *this, id);
      if (owner[1] != me) e.link->cut(Link::B, *this, id);
      links_.push_back(cut);
      ++id;
    }
  if (shortest == Time::max()) shortest = net.latency();  // nothing is cut: notes only
  if (shortest <= Time{})
    throw PartitionError(
        "between ranks, " + what +
        " takes no time, so the ranks would have no lookahead: give that path a delay, or run "
        "on one rank");
  lookahead_ = std::min(shortest, Time::ps(net.latency().as_ps() / 2));

  // Per component (every rank computes every one alike: a far end's bounds its sender's
  // effects). A GPU's work reaches the fabric only as packets out of its ports; a switch's as
  // packets out and credit returns. Whatever path follows, an effect on another rank crosses
  // a cut (at least lookahead_); a note its work makes takes effect the host latency later.
  auto bounded = [&](Time t) { return std::min(std::max(t, lookahead_), net.latency()); };
  gpu_lookahead_.assign(plan.gpu.size(), Time::max());
  switch_lookahead_.resize(fabric.planes());
  for (std::uint32_t p = 0; p < fabric.planes(); ++p) {
    switch_lookahead_[p].assign(fabric.plane(p).switches().size(), Time::max());
    for (const FabricPlane::LinkEnds& e : fabric.plane(p).link_ends())
      for (int side = 0; side < 2; ++side) {
        const bool to_gpu = e.gpu[1 - side];
        if (e.gpu[side]) {
          Time& g = gpu_lookahead_.at(e.index[side]);
          g = std::min(g, packet_delay(true, to_gpu, *e.link));
        } else {
          Time& w = switch_lookahead_[p].at(e.index[side]);
          w = std::min({w, packet_delay(false, to_gpu, *e.link), e.link->credit_delay()});
        }
      }
    for (Time& w : switch_lookahead_[p])
      w = bounded(w);
  }
  for (Time& g : gpu_lookahead_)
    g = bounded(g);
  // What reaches an end across a cut: a GPU port takes a packet in after SerDes, FEC and its
  // pipeline, then works on it or returns its credits (as it takes it in); a switch's input
  // takes it the rest of the switch's latency later, and returns credits only from its own
  // work. Credits reaching an end can only wake its sending.
  const Time switch_in = cfg.switch_.latency - switch_out;
  id = 0;
  for (std::uint32_t p = 0; p < fabric.planes(); ++p)
    for (const FabricPlane::LinkEnds& e : fabric.plane(p).link_ends()) {
      Cut& cut = links_[id++];
      for (int side = 0; side < 2; ++side) {
        if (e.gpu[side]) {
          const Time la = gpu_lookahead_.at(e.index[side]);
          cut.after_head[side] = cfg.port.rx_latency() + std::min(la, e.link->credit_delay());
          cut.after_credits[side] = la;
        } else {
          const Time la = switch_lookahead_[p].at(e.index[side]);
          cut.after_head[side] = switch_in + la;
          cut.after_credits[side] = la;
        }
      }
    }
  net_.share();
}

Partition::~Partition() = default;

Time Partition::least_gpu_lookahead() const {
  Time least = Time::max();
  for (const Time t : gpu_lookahead_)
    least = std::min(least, t);
  return least;
}

Time Partition::least_switch_lookahead() const {
  Time least = Time::max();
  for (const auto& plane : switch_lookahead_)
    for (const Time t : plane)
      least = std::min(least, t);
  return least;
}

void Partition::packet(std::uint32_t link, std::uint8_t to, tlm::tlm_generic_payload& gp,
                       Time head) {
  const Access& a = access_of(gp);
  const Cut& cut = links_[link];
  if (!cut.here) [[unlikely]]
    throw std::logic_error(fmt::format(
        "partition: a packet on {}, neither of whose ends this rank simulates", cut.link->name()));
  ByteWriter out(out_[cut.far_rank]);
  sent_effect_ = std::min(sent_effect_, head + cut.after_head[to]);
  out.put(PacketRecord{Record::Packet, link, to, head.as_ps(), sim_now().as_ps(), a.id, a.src});
  pack_packet(gp, out.bytes());
  ++counters_.packets_sent;
  // A request issued here that will be answered comes back here as itself; anything else
  // goes on as a copy on the other rank, and this rank's reference to it ends.
  if (plan_.gpu[a.src] == comm_.rank() && !unanswered(a)) {
    if (!away_.emplace(a.id, &gp).second)
      throw std::logic_error(fmt::format("partition: access {} left this rank twice", a.id));
  } else {
    gp.release();
  }
}

void Partition::credits(std::uint32_t link, std::uint8_t to, TrafficClass tc, std::uint64_t tl,
                        Time at) {
  const Cut& cut = links_[link];
  if (!cut.here) [[unlikely]]
    throw std::logic_error(fmt::format(
        "partition: credits on {}, neither of whose ends this rank simulates", cut.link->name()));
  ByteWriter(out_[cut.far_rank])
      .put(CreditRecord{Record::Credits, link, to, static_cast<std::uint8_t>(tc), tl, at.as_ps()});
  sent_effect_ = std::min(sent_effect_, at + cut.after_credits[to]);
  ++counters_.credits_sent;
}

RankComm::Agreement Partition::exchange(Time effect, bool stopped, std::size_t phase) {
  ++counters_.windows;
  PartitionCounters::ByPhase& in_phase = counters_.by_phase.at(phase);
  ++in_phase.windows;
  const std::vector<HostNote> notes = net_.take_outgoing();
  // A note takes effect on every rank the host latency after it was made, as an item of the
  // host network's queue (the default lookahead).
  for (const HostNote& n : notes)
    sent_effect_ = std::min(sent_effect_, n.at + net_.latency() + lookahead_);
  for (std::uint32_t r = 0; r < out_.size(); ++r) {
    if (r == comm_.rank()) continue;
    ByteWriter out(out_[r]);
    for (const HostNote& n : notes) {
      out.put(Record::Note);
      pack_note(n, out);
      ++counters_.notes_sent;
    }
    if (!out_[r].empty()) ++counters_.messages_sent;
    counters_.bytes_sent += out_[r].size();
  }
  // With every rank's own, the earliest time anything can happen on one rank because of
  // another: the next window ends before it.
  const auto t0 = std::chrono::steady_clock::now();
  const RankComm::Agreement a =
      comm_.exchange(out_, in_, std::min(effect, sent_effect_).as_ps(), stopped);
  const auto sync_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  counters_.sync_ns += sync_ns;
  in_phase.sync_ns += sync_ns;
  sent_effect_ = Time::max();
  for (auto& o : out_)
    o.clear();
  // What arrives must all be due after the window just simulated (else the lookaheads above
  // were no bounds): the event queue refuses anything else while it is delivered.
  events_.set_due_floor(sim_now());
  for (std::uint32_t r = 0; r < in_.size(); ++r)
    if (r != comm_.rank()) deliver(in_[r]);
  events_.set_due_floor(Time::max());
  return a;
}

void Partition::deliver(const ByteBuffer& bytes) {
  ByteReader in(bytes, "partition: a message from another rank");
  while (!in.done()) {
    // Each record starts with its kind (a packet's and credits' records are read whole).
    switch (static_cast<Record>(*in.here())) {
      case Record::Packet: {
        const auto rec = in.get<PacketRecord>();
        if (rec.link >= links_.size() || rec.to > 1 || rec.src >= plan_.gpu.size())
          throw std::runtime_error("partition: a packet for a link this pod does not have");
        tlm::tlm_generic_payload* gp = nullptr;
        if (plan_.gpu[rec.src] == comm_.rank()) {
          auto it = away_.find(rec.id);
          if (it != away_.end()) {
            gp = it->second;
            away_.erase(it);
          }
        }
        if (!gp) gp = &pool_.acquire();
        const unsigned char* rest = unpack_packet(in.here(), bytes.data() + bytes.size(), *gp);
        in.take(static_cast<std::size_t>(rest - in.here()));
        links_[rec.link].link->deliver(static_cast<Link::Side>(rec.to), *gp, Time::ps(rec.head),
                                       Time::ps(rec.sent));
        break;
      }
      case Record::Credits: {
        const auto rec = in.get<CreditRecord>();
        if (rec.link >= links_.size() || rec.to > 1 || rec.tc >= kTrafficClasses)
          throw std::runtime_error("partition: credits for a link this pod does not have");
        if (Time::ps(rec.at) <= sim_now())
          throw std::logic_error(fmt::format(
              "partition: credits on {} due at {} arrived at {}, inside a window this rank has "
              "already simulated",
              links_[rec.link].link->name(), pretty(Time::ps(rec.at)), pretty(sim_now())));
        links_[rec.link].link->deliver_credits(static_cast<Link::Side>(rec.to),
                                               static_cast<TrafficClass>(rec.tc), rec.tl,
                                               Time::ps(rec.at));
        break;
      }
      case Record::Note:
        in.get<Record>();
        net_.receive(unpack_note(in));
        break;
      default:
        throw std::runtime_error("partition: a message from another rank holds an unknown record");
    }
  }
}

}  // namespace podsim
