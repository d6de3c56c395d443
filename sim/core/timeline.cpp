#include "sim/core/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace podsim {

namespace {
// Trace-event timestamps are microseconds; ps keep six decimals.
std::string us(Time t) {
  const std::int64_t ps = t.as_ps();
  return fmt::format("{}.{:06}", ps / 1'000'000, ps % 1'000'000);
}
std::string quoted(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      q += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    else
      q += c;
  }
  return q + "\"";
}
}  // namespace

void Timeline::span(std::uint32_t gpu, std::uint32_t track, std::string name, Time start, Time end,
                    std::string args) {
  events_.push_back(
      Event{'X', gpu, track, 0, start, end - start, std::move(name), "control", std::move(args)});
}

void Timeline::async_span(std::uint32_t gpu, std::uint32_t track, std::string name, Time start,
                          Time end, std::string args) {
  events_.push_back(Event{'b', gpu, track, next_id_++, start, end - start, std::move(name),
                          track == MessagesSent ? "message" : "driver", std::move(args)});
}

void Timeline::instant(std::uint32_t gpu, std::uint32_t track, std::string name, Time at,
                       std::string args) {
  events_.push_back(
      Event{'i', gpu, track, 0, at, Time{}, std::move(name), "control", std::move(args)});
}

void Timeline::message_sent(std::uint32_t gpu, std::uint32_t to, std::string what, Time start,
                            Time end, std::string args) {
  async_span(gpu, MessagesSent, fmt::format("{} to gpu{}", what, to), start, end, std::move(args));
  // A marker where the send begins: a flow arrow leaves from it.
  events_.push_back(Event{'X', gpu, MessagesSent, 0, start, Time{}, "send " + what, "message", {}});
  sent_.push_back(Message{gpu, to, std::move(what), start, events_.size() - 1});
}

void Timeline::message_handled(std::uint32_t gpu, std::uint32_t from, std::string what, Time at,
                               std::string args) {
  events_.push_back(Event{'X', gpu, Driver, 0, at, Time{}, fmt::format("{} from gpu{}", what, from),
                          "control", std::move(args)});
  handled_.push_back(Message{from, gpu, std::move(what), at, events_.size() - 1});
}

bool Timeline::sample(std::uint32_t gpu) {
  if (seen_.size() <= gpu) seen_.resize(gpu + 1, 0);
  return seen_[gpu]++ % opt_.sample_every == 0;
}

void Timeline::access(std::uint32_t gpu, std::string name, Time start, Time end,
                      const std::vector<Hop>& hops, std::string args) {
  std::uint64_t n = 1 + hops.size();
  for (const Hop& h : hops)
    n += h.plane >= 0;
  if (access_events_ + n > opt_.max_access_events) {
    ++dropped_;
    return;
  }
  access_events_ += n;
  const std::uint64_t id = next_id_++;
  events_.push_back(Event{'b', gpu, Accesses, id, start, end - start, std::move(name), "access",
                          std::move(args)});
  for (const Hop& h : hops) {
    events_.push_back(
        Event{'b', gpu, Accesses, id, h.start, h.end - h.start, std::string(h.name), "access", {}});
    if (h.plane >= 0)  // where it happened, too
      events_.push_back(Event{'b',
                              kFabricPid + static_cast<std::uint32_t>(h.plane),
                              h.is_switch ? Switches : Links,
                              next_id_++,
                              h.start,
                              h.end - h.start,
                              fmt::format("gpu{} {}", gpu, h.name),
                              "access",
                              {}});
  }
}

std::string Timeline::to_json(std::uint32_t gpus, const std::string& failed) const {
  std::string out = "{\"displayTimeUnit\": \"ns\",\n\"otherData\": {";
  if (!failed.empty()) out += fmt::format("\"run_failed\": {}, ", quoted(failed));
  out += fmt::format(
      "\"sample_every\": {}, \"max_access_events\": {}, \"access_events\": {}, "
      "\"dropped_sampled_accesses\": {}",
      opt_.sample_every, opt_.max_access_events, access_events_, dropped_);
  out += "},\n\"traceEvents\": [\n";
  bool first = true;
  auto emit = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += e;
  };
  // Names: a process per GPU, the tracks on it.
  std::map<std::uint32_t, std::set<std::uint32_t>> tracks;
  for (const Event& e : events_)
    tracks[e.pid].insert(e.tid);
  for (std::uint32_t g = 0; g < gpus; ++g) {
    emit(fmt::format(
        R"({{"ph": "M", "pid": {}, "name": "process_name", "args": {{"name": "gpu{}"}}}})", g, g));
    emit(fmt::format(
        R"({{"ph": "M", "pid": {}, "name": "process_sort_index", "args": {{"sort_index": {}}}}})",
        g, g));
    for (std::uint32_t t : tracks[g]) {
      const std::string n = t == Driver         ? "driver"
                            : t == MessagesSent ? "messages sent"
                            : t == Accesses     ? "accesses (sampled)"
                            : t == Collective   ? "collective calls"
                            : t == Process      ? "pod (resets, faults, signals)"
                                                : fmt::format("process {}", t - Process);
      emit(fmt::format(
          R"({{"ph": "M", "pid": {}, "tid": {}, "name": "thread_name", "args": {{"name": {}}}}})",
          g, t, quoted(n)));
    }
  }
  // Flow arrows: each handling joined to the earliest unjoined send of its type from its sender
  // to it that began no later (a ring delivers in order).
  std::vector<Event> events = events_;
  {
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::string>, std::vector<const Message*>>
        sends;
    for (const Message& m : sent_)
      sends[{m.from, m.to, m.what}].push_back(&m);
    for (auto& [key, v] : sends)
      std::stable_sort(v.begin(), v.end(),
                       [](const Message* a, const Message* b) { return a->at < b->at; });
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::string>, std::size_t> next;
    std::vector<const Message*> handled;
    for (const Message& m : handled_)
      handled.push_back(&m);
    std::stable_sort(handled.begin(), handled.end(),
                     [](const Message* a, const Message* b) { return a->at < b->at; });
    std::uint64_t flow = 1;
    for (const Message* h : handled) {
      const auto key = std::make_tuple(h->from, h->to, h->what);
      auto it = sends.find(key);
      if (it == sends.end()) continue;
      std::size_t& i = next[key];
      if (i >= it->second.size() || it->second[i]->at > h->at) continue;
      events[it->second[i]->event].flow = flow;
      events[h->event].flow = flow;
      events[h->event].flow_in = true;
      ++flow;
      ++i;
    }
  }
  // The fabric's planes that any sampled hop crossed.
  for (const auto& [pid, tids] : tracks) {
    if (pid < kFabricPid) continue;
    emit(fmt::format(
        R"({{"ph": "M", "pid": {}, "name": "process_name", "args": {{"name": "plane {}"}}}})", pid,
        pid - kFabricPid));
    emit(fmt::format(
        R"({{"ph": "M", "pid": {}, "name": "process_sort_index", "args": {{"sort_index": {}}}}})",
        pid, gpus + (pid - kFabricPid)));
    for (std::uint32_t t : tids)
      emit(fmt::format(
          R"({{"ph": "M", "pid": {}, "tid": {}, "name": "thread_name", "args": {{"name": "{}"}}}})",
          pid, t, t == Switches ? "switches" : "links"));
  }
  // Events by start time (ties: as recorded); an async slice's end follows its start.
  std::vector<const Event*> order;
  order.reserve(events.size());
  for (const Event& e : events)
    order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](const Event* a, const Event* b) { return a->ts < b->ts; });
  for (const Event* e : order) {
    const std::string args = e->args.empty() ? "" : ", \"args\": " + e->args;
    switch (e->ph) {
      case 'X': {
        const std::string flow = e->flow ? fmt::format(R"(, "bind_id": "0x{:x}", "{}": true)",
                                                       e->flow, e->flow_in ? "flow_in" : "flow_out")
                                         : std::string();
        emit(fmt::format(
            R"({{"ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "name": {}, "cat": "{}"{}{}}})",
            e->pid, e->tid, us(e->ts), us(e->dur), quoted(e->name), e->cat, flow, args));
        // The same arrow as the format's flow events (older viewers read these).
        if (e->flow)
          emit(fmt::format(
              R"({{"ph": "{}", {}"pid": {}, "tid": {}, "ts": {}, "id": "0x{:x}", "name": "message", "cat": "flow"}})",
              e->flow_in ? 'f' : 's', e->flow_in ? R"("bp": "e", )" : "", e->pid, e->tid, us(e->ts),
              e->flow));
        break;
      }
      case 'i':
        emit(fmt::format(
            R"({{"ph": "i", "s": "t", "pid": {}, "tid": {}, "ts": {}, "name": {}, "cat": "{}"{}}})",
            e->pid, e->tid, us(e->ts), quoted(e->name), e->cat, args));
        break;
      default:
        emit(fmt::format(
            R"({{"ph": "b", "pid": {}, "tid": {}, "ts": {}, "id": "0x{:x}", "name": {}, "cat": "{}"{}}})",
            e->pid, e->tid, us(e->ts), e->id, quoted(e->name), e->cat, args));
        emit(fmt::format(
            R"({{"ph": "e", "pid": {}, "tid": {}, "ts": {}, "id": "0x{:x}", "name": {}, "cat": "{}"}})",
            e->pid, e->tid, us(e->ts + e->dur), e->id, quoted(e->name), e->cat));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace podsim
