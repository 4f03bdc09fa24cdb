#include "analysis/graph.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <queue>
#include <boost/graph/graphviz.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/effects.h"
#include "ir/primitive.h"

namespace tessera::graph {
namespace {

// Unique, printable names for the body's variables, the way the printer makes
// them: the name hint if it is a valid and unused word, else a number.
class Namer {
 public:
  std::string operator()(const Var* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string n = valid(v->name) ? v->name : "";
    if (n.empty()) {
      do n = std::to_string(next_++); while (taken_.count(n));
    } else if (taken_.count(n)) {
      std::string stem = n;
      for (int i = 1; taken_.count(n); ++i) n = stem + "_" + std::to_string(i);
    }
    taken_.insert(n);
    return names_[v] = "%" + n;
  }

 private:
  static bool valid(const std::string& n) {
    if (n.empty()) return false;
    return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  }
  std::unordered_map<const Var*, std::string> names_;
  std::set<std::string> taken_;
  int next_ = 0;
};

// "%c: f32[8] = add", like the op's printed line without operands. As in the
// printer, the unused results of an effectful op (a discarded swap) are left out.
std::string op_label(const Op& op, Namer& name, const std::unordered_set<const Var*>& used) {
  bool show = !has_side_effects(op) || std::any_of(op.results.begin(), op.results.end(),
                                                   [&](const Var* r) { return used.count(r) > 0; });
  std::string out;
  for (size_t i = 0; i < op.results.size(); ++i) {
    std::string n = name(op.results[i]);  // named even when hidden, so numbers match the printer's
    if (show) out += (i ? ", " : "") + n + ": " + op.results[i]->type.str();
  }
  if (!out.empty()) out += " = ";
  out += op.name();
  // Named bodies (a pallas_call's kernel, a call's callee) say which code runs.
  std::string refs;
  for (const BodyPtr& b : op.nested_bodies())
    if (!b->name().empty() && b->kind() != BodyKind::index_map) refs += (refs.empty() ? "" : ", ") + ("@" + b->name());
  if (!refs.empty()) out += " " + refs;
  return out;
}

// Ref accesses fall in three classes; two accesses conflict (must keep their
// order) unless both read or both accumulate.
enum class Access { Read, Accum, Write };

Access access_of(uint8_t bits) {
  if (bits == kRead) return Access::Read;
  if (bits == kAccum) return Access::Accum;
  return Access::Write;  // a write, or several kinds at once (swap reads and writes)
}

const char* access_word(Access a) {
  switch (a) {
    case Access::Read: return "read";
    case Access::Accum: return "accum";
    case Access::Write: return "write";
  }
  return "";
}

// Per Ref: the current group of mutually commuting accesses and the group
// before it. A new access that commutes with the current group depends only on
// the previous group; otherwise it depends on the whole current group and
// starts a new one. This adds no edge that the others already imply, except
// across groups of different commuting classes.
struct RefHistory {
  Access cls = Access::Read;
  std::vector<Vertex> current, previous;
};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

DefUseGraph def_use_graph(const Body& body, const GraphOptions& opts) {
  DefUseGraph g;
  Namer name;
  std::unordered_map<const Var*, Vertex> def;
  std::unordered_set<const Var*> used;
  for (const Op& op : body.ops())
    for (const Value& v : op.operands)
      if (v.is_var()) used.insert(v.var());
  for (const Value& v : body.outputs())
    if (v.is_var()) used.insert(v.var());

  for (size_t p = 0; p < body.params().size(); ++p) {
    const Var* v = body.params()[p];
    Vertex u = boost::add_vertex(g);
    g[u] = Node{Node::Param, static_cast<int>(p), v, nullptr, name(v) + ": " + v->type.str()};
    def[v] = u;
  }

  std::set<std::pair<Vertex, Vertex>> effect_pairs;
  auto effect_edge = [&](Vertex from, Vertex to, const std::string& why) {
    if (from == to || !effect_pairs.insert({from, to}).second) return;
    boost::add_edge(from, to, Edge{EdgeKind::EffectOrder, why}, g);
  };
  std::unordered_map<const Var*, RefHistory> refs;
  std::optional<Vertex> last_io, last_comms;

  auto use_edges = [&](const std::vector<Value>& values, Vertex user) {
    std::set<Vertex> seen;
    for (const Value& v : values) {
      if (!v.is_var()) continue;
      auto it = def.find(v.var());
      if (it == def.end()) throw Error(body.loc(), "graph: value " + name(v.var()) + " is used before it is defined");
      if (!seen.insert(it->second).second) continue;
      boost::add_edge(it->second, user, Edge{EdgeKind::DefUse, name(v.var())}, g);
    }
  };

  for (size_t i = 0; i < body.ops().size(); ++i) {
    const Op& op = body.ops()[i];
    Vertex u = boost::add_vertex(g);
    g[u] = Node{Node::Op, static_cast<int>(i), nullptr, &op, op_label(op, name, used)};
    use_edges(op.operands, u);
    for (const Var* r : op.results) def[r] = u;
    if (!opts.effect_edges) continue;

    OpEffects fx = op_effects(op);
    if (fx.io) {
      if (last_io) effect_edge(*last_io, u, "io");
      last_io = u;
    }
    if (fx.comms) {
      if (last_comms) effect_edge(*last_comms, u, "comms");
      last_comms = u;
    }
    // Merge the bits per Ref first (one op may name a Ref twice), keeping the
    // order of first mention so the output does not depend on addresses.
    std::vector<std::pair<const Var*, uint8_t>> touched;
    for (auto [operand, bits] : fx.on_operand) {
      const Value& v = op.operands.at(operand);
      if (!v.is_var() || !v.var()->type.is_ref()) continue;
      auto same = std::find_if(touched.begin(), touched.end(), [&](const auto& t) { return t.first == v.var(); });
      if (same == touched.end()) touched.emplace_back(v.var(), bits);
      else same->second |= bits;
    }
    for (auto [ref, bits] : touched) {
      Access a = access_of(bits);
      RefHistory& h = refs[ref];
      std::string why = std::string(access_word(a)) + " " + name(ref);
      bool commutes = !h.current.empty() && a != Access::Write && h.cls == a;
      if (commutes) {
        for (Vertex w : h.previous) effect_edge(w, u, why);
        h.current.push_back(u);
      } else {
        for (Vertex w : h.current) effect_edge(w, u, why);
        h.previous = std::move(h.current);
        h.current = {u};
        h.cls = a;
      }
    }
  }

  if (opts.return_node && !body.outputs().empty()) {
    Vertex u = boost::add_vertex(g);
    g[u] = Node{Node::Return, 0, nullptr, nullptr, "return"};
    use_edges(body.outputs(), u);
  }
  return g;
}

std::vector<Vertex> topological_order(const DefUseGraph& g) {
  // Kahn's algorithm, always taking the lowest-numbered ready vertex, so the
  // order is deterministic (for a Body's graph: parameters, then program order).
  size_t n = boost::num_vertices(g);
  std::vector<size_t> waiting(n);
  std::priority_queue<Vertex, std::vector<Vertex>, std::greater<>> ready;
  for (Vertex v = 0; v < n; ++v) {
    waiting[v] = boost::in_degree(v, g);
    if (waiting[v] == 0) ready.push(v);
  }
  std::vector<Vertex> order;
  order.reserve(n);
  while (!ready.empty()) {
    Vertex v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e)
      if (--waiting[boost::target(*e, g)] == 0) ready.push(boost::target(*e, g));
  }
  if (order.size() != n) throw Error("graph: the graph has a cycle, so it has no topological order");
  return order;
}

std::vector<const Op*> ops_in_topological_order(const Body& body) {
  DefUseGraph g = def_use_graph(body);
  std::vector<const Op*> ops;
  for (Vertex v : topological_order(g))
    if (g[v].kind == Node::Op) ops.push_back(g[v].op);
  return ops;
}

std::vector<int> depths(const DefUseGraph& g) {
  std::vector<int> depth(boost::num_vertices(g), 0);
  for (Vertex v = 0; v < depth.size(); ++v) depth[v] = g[v].kind == Node::Op ? 1 : 0;
  for (Vertex v : topological_order(g)) {
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      Vertex w = boost::target(*e, g);
      depth[w] = std::max(depth[w], depth[v] + (g[w].kind == Node::Op ? 1 : 0));
    }
  }
  return depth;
}

std::vector<Vertex> schedule_by_level(const DefUseGraph& g) {
  std::vector<int> depth = depths(g);
  std::vector<Vertex> ops;
  for (Vertex v = 0; v < depth.size(); ++v)
    if (g[v].kind == Node::Op) ops.push_back(v);
  std::stable_sort(ops.begin(), ops.end(), [&](Vertex a, Vertex b) { return depth[a] < depth[b]; });
  return ops;
}

void write_dot(std::ostream& os, const DefUseGraph& g, const std::string& name) {
  auto vertex_writer = [&](std::ostream& out, Vertex v) {
    const Node& n = g[v];
    out << "[label=\"" << escape(n.label) << "\"";
    if (n.kind == Node::Param) out << ", shape=box, style=rounded";
    else if (n.kind == Node::Return) out << ", shape=box";
    else out << ", shape=ellipse";
    out << "]";
  };
  auto edge_writer = [&](std::ostream& out, DefUseGraph::edge_descriptor e) {
    const Edge& d = g[e];
    out << "[label=\"" << escape(d.label) << "\"";
    if (d.kind == EdgeKind::EffectOrder) out << ", style=dashed, color=gray40, fontcolor=gray40";
    out << "]";
  };
  auto graph_writer = [&](std::ostream& out) {
    out << "label=\"" << escape(name) << "\";\n";
    out << "node [fontname=\"monospace\"];\nedge [fontname=\"monospace\", fontsize=10];\n";
  };
  boost::write_graphviz(os, g, vertex_writer, edge_writer, graph_writer);
}

std::string to_dot(const Body& body, const GraphOptions& opts) {
  std::ostringstream os;
  write_dot(os, def_use_graph(body, opts), "@" + body.name());
  return os.str();
}

}  // namespace tessera::graph
