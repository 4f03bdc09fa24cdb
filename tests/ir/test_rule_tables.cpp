// The sweep of every rule table (ir/rule_table.h) against every primitive:
// each consumer gives each primitive a rule or a stated reason, never both;
// prints the matrix. Links the whole library (libtessera), so it sees every
// table a consumer registers.
#include <doctest/doctest.h>

#include <algorithm>
#include <iostream>

#include "ir/rule_table.h"

using namespace tessera;

namespace {

char cell(RuleCoverage c) {
  switch (c) {
    case RuleCoverage::rule: return 'R';
    case RuleCoverage::no_rule_needed: return '-';
    case RuleCoverage::unsupported: return 'x';
    case RuleCoverage::pending: return 'p';
    case RuleCoverage::missing: return '!';
  }
  return '?';
}

// One line per primitive, one column per consumer (numbered in the legend).
void print_matrix(const std::vector<RegisteredTable>& tables) {
  std::cout << "rule tables (R rule, - no rule needed, x unsupported, p pending, ! missing):\n";
  for (size_t k = 0; k < tables.size(); ++k) std::cout << "  " << k % 10 << " " << tables[k].consumer << "\n";
  for (const Primitive* p : registry().all()) {
    std::string line(tables.size(), ' ');
    for (size_t k = 0; k < tables.size(); ++k) line[k] = cell(tables[k].table->coverage(*p));
    std::cout << "  " << line << "  " << p->name << "\n";
  }
}

}  // namespace

TEST_CASE("rule tables: every consumer gives every primitive a rule or a reason, never both") {
  std::vector<RegisteredTable> tables = rule_tables();
  // The consumers of every layer are listed (a table whose registration the
  // linker dropped would be missing here).
  for (const char* c : {"jvp", "vmap", "transpose", "discharge", "dce", "partial_eval", "interpreter", "mosaic", "ptx",
                        "llvm", "prove.walker", "prove.protocol", "prove.int", "cost.op", "cost.walker", "verify.context"})
    CHECK_MESSAGE(find_rule_table(c) != nullptr, c);
  print_matrix(tables);
  for (const RegisteredTable& t : tables)
    for (const std::string& defect : coverage_defects(*t.table, t.consumer)) FAIL_CHECK(defect);
}

TEST_CASE("rule tables: a planted table without a rule, or with a rule and a reason, is a defect") {
  RuleTable<int> t("planted");
  t.set("add", 1);
  t.unsupported("add", "planted contradiction");
  t.no_rule_needed_family(Family::elementwise, "elementwise", [](const Primitive& p) { return p.name != "add" && p.name != "sub"; });
  std::vector<std::string> defects = coverage_defects(t, "planted");
  auto has = [&](const std::string& line) { return std::find(defects.begin(), defects.end(), line) != defects.end(); };
  CHECK(has("planted: `sub` has no rule and no reason"));
  CHECK(has("planted: `reduce_sum` has no rule and no reason"));
  CHECK(std::count_if(defects.begin(), defects.end(), [](const std::string& d) {
          return d.rfind("planted: `add` has a rule (tests/ir/test_rule_tables.cpp:", 0) == 0 &&
                 d.find("and a stated reason (planted contradiction)") != std::string::npos;
        }) == 1);
  // A pending or default reason covers the rest; a default may cover only some.
  t.set_default("by default", [](const Primitive& p) { return p.name != "sub"; });
  CHECK(t.coverage(prim("reduce_sum")) == RuleCoverage::no_rule_needed);
  CHECK(t.coverage(prim("sub")) == RuleCoverage::missing);
  t.set_pending("not written yet");
  CHECK(t.coverage(prim("sub")) == RuleCoverage::pending);
  CHECK(coverage_defects(t, "planted").size() == 1);  // the contradiction stays
}

TEST_CASE("rule tables: a rule records where it was registered; a missing rule's error ends with the reason") {
  RuleTable<int> t("planted");
  t.set("exp", 1);
  int line = __LINE__ - 1;
  CHECK(t.describe(prim("exp")) == "rule (tests/ir/test_rule_tables.cpp:" + std::to_string(line) + ")");
  t.unsupported("log", "planted reason");
  CHECK(t.describe(prim("log")) == "unsupported: planted reason");
  try {
    t.at(prim("log"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.message() == "no planted rule for primitive log: planted reason");
  }
  try {
    t.at(prim("sin"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.message() == "no planted rule for primitive sin");
  }
  CHECK(t.describe(prim("sin")) == "MISSING");
}
