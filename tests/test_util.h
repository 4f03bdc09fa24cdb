// Helpers shared by the tests of every folder: files and examples, parsing,
// errors, text checks, finding ops. A folder's own *_util.h holds only what is
// specific to that folder (and includes this one).
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "ir/ir.h"
#include "ir/parser.h"
#include "ir/printer.h"

// Passed to every test by tests/meson.build (doctest_main_dep).
#ifndef TESSERA_EXAMPLES_DIR
#error "TESSERA_EXAMPLES_DIR is not defined: link the test with doctest_main_dep (tests/meson.build)"
#endif

// CHECK that `text` contains `part`, showing both when it does not.
#define CHECK_HAS(text, part)                                                                         \
  do {                                                                                                \
    const std::string text_ = (text);                                                                 \
    const std::string part_ = (part);                                                                 \
    CHECK_MESSAGE(text_.find(part_) != std::string::npos, "'" << text_ << "' lacks '" << part_ << "'"); \
  } while (0)

namespace tessera::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The kernel zoo: examples/NAME (NAME with its .tsr).
inline std::filesystem::path examples_dir() { return TESSERA_EXAMPLES_DIR; }
inline std::filesystem::path example_path(const std::string& name) { return examples_dir() / name; }
inline std::string example_text(const std::string& name) { return read_file(example_path(name)); }

// A fresh directory for one test's files (under the system temp directory).
inline std::filesystem::path temp_dir(const std::string& tag) {
  std::filesystem::path d = std::filesystem::temp_directory_path() / ("tessera_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// Modules parsed from test text are named t.tsr in messages ("t.tsr:L:C: error: ...").
inline Module parse(std::string_view text) { return parse_module(text, "t.tsr"); }

// The formatted error parsing `text` throws, or "<no error>".
inline std::string parse_error(std::string_view text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.formatted();
  }
  return "<no error>";
}

// The formatted Error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.formatted();
  }
  return "";
}

// Replaces every occurrence of `from` with `to`.
inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// Replaces the first occurrence of `from`, which must exist (a mutation site).
inline std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "not found: " << from);
  return s.replace(at, from.size(), to);
}

// Checks that each string of `lines` occurs in `text`, in order (FileCheck's CHECK).
inline void check_in_order(const std::string& text, const std::vector<std::string>& lines) {
  size_t at = 0;
  for (const std::string& l : lines) {
    size_t p = text.find(l, at);
    INFO("looking for: " << l << "\nin:\n" << text);
    REQUIRE(p != std::string::npos);
    at = p + l.size();
  }
}

// The first op of primitive `prim` in `b` (fails the test when there is none).
inline const Op& only_op(const Body& b, const std::string& prim) {
  for (const Op& op : b.ops())
    if (op.name() == prim) return op;
  FAIL("no " << prim << " op in @" << b.name());
  return b.ops().front();
}

}  // namespace tessera::testing
