#include "interpreter/timeline.h"

#include "ir/json.h"

namespace tessera::interp {

TraceArg arg(std::string key, std::string_view text) { return {std::move(key), json_quote(text)}; }
TraceArg arg(std::string key, const char* text) { return arg(std::move(key), std::string_view(text)); }
TraceArg arg(std::string key, int64_t n) { return {std::move(key), std::to_string(n)}; }
TraceArg arg(std::string key, bool b) { return {std::move(key), b ? "true" : "false"}; }
TraceArg arg(std::string key, const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return {std::move(key), s + "]"};
}

void Timeline::push(Event e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (e.gc >= 0) cores_seen_.insert(e.gc);
  events_.push_back(std::move(e));
}

void Timeline::complete(int gc, std::string name, std::string cat, int64_t start, TraceArgs args) {
  push(Event{'X', std::move(name), std::move(cat), start, now() - start, -1, gc, std::move(args)});
}

void Timeline::instant(int gc, std::string name, std::string cat, TraceArgs args) {
  push(Event{'i', std::move(name), std::move(cat), now(), 0, -1, gc, std::move(args)});
}

int64_t Timeline::async_begin(int gc, std::string name, std::string cat, TraceArgs args) {
  Event e{'b', std::move(name), std::move(cat), now(), 0, -1, gc, std::move(args)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.id = next_id_++;
    open_[e.id] = Event{'e', e.name, e.cat, 0, 0, e.id, gc, {}};
  }
  int64_t id = e.id;
  push(std::move(e));
  return id;
}

void Timeline::async_end(int64_t id, TraceArgs args) {
  Event e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return;
    e = std::move(it->second);
    open_.erase(it);
  }
  e.ts = now();
  e.args = std::move(args);
  push(std::move(e));
}

void Timeline::expect_wait(int64_t sem, int gc, int64_t bytes, int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_[{sem, gc}].push_back(Pending{id, bytes});
}

void Timeline::waited(int64_t sem, int gc, int64_t value) {
  std::vector<int64_t> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find({sem, gc});
    if (it == pending_.end()) return;
    std::vector<Pending>& q = it->second;
    size_t k = 0;
    for (; k < q.size() && value > 0; ++k) {
      if (q[k].bytes > value) {  // a wait for part of a DMA's bytes
        q[k].bytes -= value;
        break;
      }
      value -= q[k].bytes;
      done.push_back(q[k].id);
    }
    q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(done.size()));
  }
  for (int64_t id : done) async_end(id);
}

void Timeline::close_open() {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : open_) ids.push_back(id);
    pending_.clear();
  }
  for (int64_t id : ids) async_end(id, {arg("unfinished", true)});
}

namespace {

std::string args_json(const TraceArgs& args) {
  std::string s = "{";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + json_quote(args[i].key) + ": " + args[i].json;
  return s + "}";
}

}  // namespace

std::string Timeline::json() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lines;
  // Names of processes (devices) and threads (cores), then the events.
  std::set<int> devices;
  for (int gc : cores_seen_) devices.insert(gc / cores_);
  if (devices.empty()) devices.insert(0);
  for (int d : devices)
    lines.push_back("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(d) +
                    ", \"tid\": 0, \"args\": {\"name\": \"device " + std::to_string(d) + "\"}}");
  for (int gc : cores_seen_)
    lines.push_back("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + std::to_string(gc / cores_) +
                    ", \"tid\": " + std::to_string(gc % cores_) + ", \"args\": {\"name\": \"core " +
                    std::to_string(gc % cores_) + "\"}}");
  for (const Event& e : events_) {
    int gc = e.gc < 0 ? 0 : e.gc;
    std::string s = "{\"name\": " + json_quote(e.name) + ", \"cat\": " + json_quote(e.cat) + ", \"ph\": \"" + e.ph +
                    "\", \"ts\": " + std::to_string(e.ts);
    if (e.ph == 'X') s += ", \"dur\": " + std::to_string(e.dur);
    if (e.ph == 'b' || e.ph == 'e') s += ", \"id\": " + std::to_string(e.id);
    if (e.ph == 'i') s += std::string(", \"s\": \"") + (e.gc < 0 ? 'g' : 't') + "\"";
    s += ", \"pid\": " + std::to_string(gc / cores_) + ", \"tid\": " + std::to_string(gc % cores_) +
         ", \"args\": " + args_json(e.args) + "}";
    lines.push_back(std::move(s));
  }
  std::string out = "{\"traceEvents\": [\n";
  for (size_t i = 0; i < lines.size(); ++i) out += "  " + lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  out += "],\n";
  out += "\"otherData\": {\"producer\": \"tessera run --timeline\", \"clock\": "
         "\"logical: one tick (shown as 1 us) per op evaluated, grid step, block copy and DMA copy\"}}\n";
  return out;
}

Timeline::Span::Span(Timeline& t, int gc, std::string name, std::string cat, TraceArgs args)
    : t_(t), gc_(gc), name_(std::move(name)), cat_(std::move(cat)), args_(std::move(args)), start_(t.now()),
      exceptions_(std::uncaught_exceptions()) {}

Timeline::Span::~Span() {
  try {
    if (std::uncaught_exceptions() > exceptions_) args_.push_back(arg("unfinished", true));
    t_.complete(gc_, std::move(name_), std::move(cat_), start_, std::move(args_));
  } catch (...) {
    // Out of memory while unwinding: the event is lost, the error is not.
  }
}

}  // namespace tessera::interp
