// Helpers for the IR unit tests: one-op modules, and the types or errors their
// ops produce (parse, parse_error, CHECK_HAS: tests/test_util.h).
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "ir/ir.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/test_util.h"

namespace tessera::testing {

// `func @f(PARAMS) {\n  STMT\n}`: one statement, on line 2, column 3.
inline std::string one_op_module(const std::string& params, const std::string& stmt) {
  return "func @f(" + params + ") {\n  " + stmt + "\n}\n";
}

// Result types of the single op `stmt` in a function with parameters `params`,
// as "f32[8]" or "(f32[8], i32)" for several results and "()" for none.
inline std::string result_types(const std::string& params, const std::string& stmt) {
  Module m = parse(one_op_module(params, stmt));
  const Op& op = m.find("f")->ops().back();
  if (op.results.size() == 1) return op.results[0]->type.str();
  std::string s = "(";
  for (size_t i = 0; i < op.results.size(); ++i) s += (i ? ", " : "") + op.results[i]->type.str();
  return s + ")";
}

// The error the shape rule (or parser) gives for `stmt`; located at 2:3 when
// the shape rule throws.
inline std::string op_error(const std::string& params, const std::string& stmt) {
  return parse_error(one_op_module(params, stmt));
}

// print(parse(text)), and a check that printing is a fixed point.
inline std::string canonical(std::string_view text) {
  std::string once = print_module(parse(text));
  std::string twice = print_module(parse_module(once, "printed.tsr"));
  CHECK_MESSAGE(once == twice, "not a fixed point:\n" << once << "\nvs\n" << twice);
  return once;
}

}  // namespace tessera::testing
