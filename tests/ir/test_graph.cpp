// analysis/graph.h: def-use and effect-order graphs, topological orders, dot.
#include <boost/graph/graph_utility.hpp>

#include "analysis/graph.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;
using namespace tessera::graph;

namespace {
// "A -> B" for every edge of `kind`, using node labels up to the first ':' or ' '.
std::vector<std::string> edges(const DefUseGraph& g, EdgeKind kind) {
  auto short_label = [&](Vertex v) {
    const std::string& l = g[v].label;
    return l.substr(0, l.find_first_of(": "));
  };
  std::vector<std::string> out;
  for (auto [e, end] = boost::edges(g); e != end; ++e)
    if (g[*e].kind == kind)
      out.push_back(short_label(boost::source(*e, g)) + " -> " + short_label(boost::target(*e, g)) + " [" + g[*e].label + "]");
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("graph: vertices are params, ops and return; def-use edges follow operands") {
  Module m = parse(
      "func @f(%x: f32[8], %y: f32[8]) -> f32[8] {\n"
      "  %a = add %x, %y\n"
      "  %b = mul %a, %a\n"
      "  return %b\n"
      "}\n");
  const Body& f = *m.find("f");
  DefUseGraph g = def_use_graph(f);
  CHECK(boost::num_vertices(g) == 5);
  CHECK(g[param_vertex(f, 1)].kind == Node::Param);
  CHECK(g[param_vertex(f, 1)].label == "%y: f32[8]");
  CHECK(g[op_vertex(f, 0)].op == &f.ops()[0]);
  CHECK(g[op_vertex(f, 1)].label == "%b: f32[8] = mul");
  CHECK(g[4].kind == Node::Return);
  // `mul %a, %a` uses %a twice but gets one edge.
  CHECK(edges(g, EdgeKind::DefUse) ==
        std::vector<std::string>{"%a -> %b [%a]", "%b -> return [%b]", "%x -> %a [%x]", "%y -> %a [%y]"});
  CHECK(edges(g, EdgeKind::EffectOrder).empty());
  GraphOptions no_return;
  no_return.return_node = false;
  CHECK(boost::num_vertices(def_use_graph(f, no_return)) == 4);
}

TEST_CASE("graph: effect-order edges between conflicting Ref accesses only") {
  Module m = parse(
      "kernel @k(%r: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %acc: ref<f32[8], vmem>) {\n"
      "  %a = get %r[:]\n"     // op 0: read r
      "  %b = get %r[:]\n"     // op 1: read r (commutes with op 0)
      "  swap %r[:], %b\n"      // op 2: write r: after both reads
      "  %c = get %r[:]\n"     // op 3: read r: after the write
      "  addupdate %acc[:], %a\n"  // op 4: accum acc
      "  addupdate %acc[:], %c\n"  // op 5: accum acc (commutes with op 4)
      "  %d = get %acc[:]\n"   // op 6: read acc: after both accums
      "  swap %o[:], %d\n"      // op 7: write o: no earlier access
      "}\n");
  DefUseGraph g = def_use_graph(*m.find("k"));
  std::vector<std::string> fx = edges(g, EdgeKind::EffectOrder);
  // Unnamed results (the swaps) print as numbers; compare by vertex instead.
  std::vector<std::pair<int, int>> pairs;
  for (auto [e, end] = boost::edges(g); e != end; ++e)
    if (g[*e].kind == EdgeKind::EffectOrder) pairs.push_back({g[boost::source(*e, g)].index, g[boost::target(*e, g)].index});
  std::sort(pairs.begin(), pairs.end());
  CHECK(pairs == std::vector<std::pair<int, int>>{{0, 2}, {1, 2}, {2, 3}, {4, 6}, {5, 6}});
  bool labelled = false;
  for (auto [e, end] = boost::edges(g); e != end; ++e)
    if (g[*e].kind == EdgeKind::EffectOrder && g[boost::target(*e, g)].index == 2) labelled |= g[*e].label == "write %r";
  CHECK(labelled);
  GraphOptions off;
  off.effect_edges = false;
  CHECK(edges(def_use_graph(*m.find("k"), off), EdgeKind::EffectOrder).empty());
}

TEST_CASE("graph: ordered io and comms ops form chains; nested effects count") {
  Module m = parse(
      "func @f(%x: f32, %s: ref<sem[2], semaphore>, %r: ref<f32[8], vmem>) {\n"
      "  debug_print[fmt=\"a\"]\n"                         // 0 io
      "  semaphore_signal %s[0], 1\n"                       // 1 comms, writes s
      "  debug_print[fmt=\"b {}\"] %x\n"                    // 2 io
      "  semaphore_wait %s[1], 1\n"                         // 3 comms, writes s
      "  for[body=fn(%i: i32, %q: ref<f32[8], vmem>) { swap %q[%i], 0.0 }, num_consts=1] 0:i32, 8:i32, %r\n"  // 4 writes r
      "  %v = get %r[:]\n"                                  // 5 reads r
      "}\n");
  DefUseGraph g = def_use_graph(*m.find("f"));
  std::vector<std::tuple<int, int, std::string>> fx;
  for (auto [e, end] = boost::edges(g); e != end; ++e)
    if (g[*e].kind == EdgeKind::EffectOrder)
      fx.emplace_back(g[boost::source(*e, g)].index, g[boost::target(*e, g)].index, g[*e].label);
  std::sort(fx.begin(), fx.end());
  using T = std::tuple<int, int, std::string>;
  CHECK(fx == std::vector<T>{T{0, 2, "io"}, T{1, 3, "comms"}, T{4, 5, "read %r"}});
}

TEST_CASE("graph: topological orders respect every edge") {
  Module m = parse(
      "kernel @k(%r: ref<f32[8], vmem>, %x: f32[8]) {\n"
      "  %a = get %r[:]\n"
      "  %b = exp %x\n"
      "  swap %r[:], %b\n"
      "  %c = add %a, %b\n"
      "}\n");
  const Body& k = *m.find("k");
  DefUseGraph g = def_use_graph(k);
  std::vector<Vertex> order = topological_order(g);
  REQUIRE(order.size() == boost::num_vertices(g));
  std::vector<size_t> pos(order.size());
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  for (auto [e, end] = boost::edges(g); e != end; ++e) CHECK(pos[boost::source(*e, g)] < pos[boost::target(*e, g)]);
  std::vector<const Op*> ops = ops_in_topological_order(k);
  CHECK(ops.size() == 4);
  auto at = [&](const Op* op) { return std::find(ops.begin(), ops.end(), op) - ops.begin(); };
  CHECK(at(&k.ops()[0]) < at(&k.ops()[2]));  // read before the write (effect edge)
  CHECK(at(&k.ops()[1]) < at(&k.ops()[2]));  // def before use
  // Program order is the deterministic topological order of a Body's graph.
  for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i);
  std::vector<int> d = depths(g);
  CHECK(d[param_vertex(k, 0)] == 0);
  CHECK(d[op_vertex(k, 0)] == 1);  // get %r
  CHECK(d[op_vertex(k, 1)] == 1);  // exp %x
  CHECK(d[op_vertex(k, 2)] == 2);  // swap: after exp (its value) and the get (effect order)
  CHECK(d[op_vertex(k, 3)] == 2);  // add needs get and exp first
  std::vector<Vertex> levels = schedule_by_level(g);
  CHECK(levels == std::vector<Vertex>{op_vertex(k, 0), op_vertex(k, 1), op_vertex(k, 2), op_vertex(k, 3)});
}

TEST_CASE("graph: levels follow effect edges too") {
  Module m = parse(
      "kernel @k(%r: ref<f32[8], vmem>) {\n"
      "  swap %r[:], 1.0\n"      // op 0
      "  debug_print[fmt=\"a\"]\n"
      "  %v = get %r[:]\n"       // op 2: after the swap, though it uses no value of it
      "}\n");
  const Body& k = *m.find("k");
  DefUseGraph g = def_use_graph(k);
  std::vector<int> d = depths(g);
  CHECK(d[op_vertex(k, 0)] == 1);
  CHECK(d[op_vertex(k, 1)] == 1);
  CHECK(d[op_vertex(k, 2)] == 2);
  CHECK(schedule_by_level(g) == std::vector<Vertex>{op_vertex(k, 0), op_vertex(k, 1), op_vertex(k, 2)});
}

TEST_CASE("graph: a cycle is an error, not a hang") {
  DefUseGraph g;
  Vertex a = boost::add_vertex(g), b = boost::add_vertex(g);
  boost::add_edge(a, b, g);
  boost::add_edge(b, a, g);
  CHECK_THROWS_AS(topological_order(g), Error);
}

TEST_CASE("graph: dot output") {
  Module m = parse(
      "kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {\n"
      "  %a = get %x[:]\n"
      "  swap %o[:], %a\n"
      "  debug_print[fmt=\"say \\\"hi\\\"\"]\n"
      "}\n");
  std::string dot = to_dot(*m.find("k"));
  CHECK(dot.rfind("digraph G {", 0) == 0);
  CHECK_HAS(dot, "label=\"@k\";");
  CHECK_HAS(dot, "0[label=\"%x: ref<f32[8], vmem>\", shape=box, style=rounded];");
  CHECK_HAS(dot, "2[label=\"%a: f32[8] = get\", shape=ellipse];");
  CHECK_HAS(dot, "0->2 [label=\"%x\"];");
  CHECK_HAS(dot, "2->3 [label=\"%a\"];");
  CHECK_HAS(dot, "4[label=\"debug_print\", shape=ellipse];");
  CHECK(dot.find("style=dashed") == std::string::npos);  // no two ops conflict here
  CHECK(dot.substr(dot.size() - 2) == "}\n");
}
