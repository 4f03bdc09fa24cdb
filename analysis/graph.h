// Def-use and effect-order graphs of a body (Boost.Graph), and Graphviz export.
//
// One vertex per body parameter, one per op, and one for the body's `return`
// (when it returns values). Two kinds of edges:
//   - DefUse:      the op or parameter defining a value -> each op using it
//                  (one edge per (definer, user) pair, even if used twice);
//   - EffectOrder: op A -> later op B that must stay after A because both have
//                  ordered effects (io with io, comms with comms), or both touch
//                  the same Ref and at least one writes it (read and read, or
//                  accum and accum, commute and get no edge).
// Effects of nested bodies count as the effects of the op holding them
// (op_effects() maps them onto its operands), so a `for` whose body writes a
// Ref orders against the ops around it.
//
// Edges only ever point forward in program order, so the graph is a DAG; any
// topological order of it is a legal schedule of the body's ops.
//
//   DefUseGraph g = def_use_graph(body);
//   for (Vertex v : topological_order(g)) if (g[v].op) schedule(*g[v].op);
//   write_dot(std::cout, g);
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tessera::graph {

struct Node {
  enum Kind : uint8_t { Param, Op, Return };
  Kind kind = Op;
  int index = 0;                  // parameter index or op index in the body (0 for Return)
  const Var* param = nullptr;     // Param only
  const tessera::Op* op = nullptr;  // Op only
  std::string label;              // "%x: f32[8]", "%c = add : f32[8]", "return"
};

enum class EdgeKind : uint8_t { DefUse, EffectOrder };

struct Edge {
  EdgeKind kind = EdgeKind::DefUse;
  std::string label;  // DefUse: the value's name ("%a"); EffectOrder: why ("write %o", "io", "comms")
};

using DefUseGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Node, Edge>;
using Vertex = DefUseGraph::vertex_descriptor;

struct GraphOptions {
  bool effect_edges = true;  // add EffectOrder edges
  bool return_node = true;   // add the `return` vertex
};

// The graph of `body`'s top level (nested bodies appear as the op holding
// them). Vertices are numbered: parameters first, then ops in program order,
// then the return node.
DefUseGraph def_use_graph(const Body& body, const GraphOptions& opts = {});

// The vertex of parameter `p` / op `i` in a graph built by def_use_graph.
inline Vertex param_vertex(const Body&, int p) { return static_cast<Vertex>(p); }
inline Vertex op_vertex(const Body& body, int i) { return static_cast<Vertex>(body.params().size() + i); }

// Vertices in a topological order (every edge goes from earlier to later);
// among ready vertices the lowest-numbered comes first, so for a Body's graph
// this is parameters, then ops in program order. Throws Error on a cycle
// (never for a graph of a Body).
std::vector<Vertex> topological_order(const DefUseGraph& g);

// The body's ops in the topological order of its graph.
std::vector<const Op*> ops_in_topological_order(const Body& body);

// Per vertex, its level: 0 for parameters; for an op, 1 + the longest chain
// of ops before it along any edges (def-use or effect order). Ops of one
// level do not depend on each other: they could run at the same time.
std::vector<int> depths(const DefUseGraph& g);

// The ops ordered by level, then program order: an as-soon-as-possible
// schedule that respects every edge.
std::vector<Vertex> schedule_by_level(const DefUseGraph& g);

// Graphviz dot text: solid DefUse edges labelled with the value, dashed
// EffectOrder edges labelled with the effect. `name` becomes the graph's name.
void write_dot(std::ostream& os, const DefUseGraph& g, const std::string& name = "body");
std::string to_dot(const Body& body, const GraphOptions& opts = {});

}  // namespace tessera::graph
