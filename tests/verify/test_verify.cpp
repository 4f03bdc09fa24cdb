// The verifier on text: every example is clean, and every file in cases/ gets
// the diagnostic its first line announces, at the announced line and column:
//   # expect: LINE:COL: a substring of the message
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "ir/parser.h"
#include "verify/check.h"
#include "tests/test_util.h"
#include "verify/verify.h"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

std::vector<fs::path> tsr_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tsr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct Expectation {
  int line = 0, col = 0;
  std::string message;
};

// Reads `# expect: LINE:COL: message` from the first line of `path`.
bool read_expectation(const fs::path& path, Expectation& e) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  std::smatch m;
  static const std::regex re(R"(^# expect: (\d+):(\d+): (.+)$)");
  if (!std::regex_match(first, m, re)) return false;
  e.line = std::stoi(m[1]);
  e.col = std::stoi(m[2]);
  e.message = m[3];
  return true;
}

std::string all_messages(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const Diagnostic& d : diags) s += "  " + d.str() + "\n";
  return s.empty() ? "  (none)\n" : s;
}

}  // namespace

TEST_CASE("every example verifies without diagnostics") {
  std::vector<fs::path> files = tsr_files(testing::examples_dir());
  REQUIRE(!files.empty());
  for (const fs::path& f : files) {
    INFO("example: " << f.string());
    std::vector<Diagnostic> diags;
    try {
      diags = verify_module(parse_file(f.string()));
    } catch (const Error& e) {
      // Parse errors belong to the example's author, not the verifier; still a failure here.
      FAIL_CHECK("does not parse: " << e.formatted());
      continue;
    }
    CHECK_MESSAGE(diags.empty(), "diagnostics:\n" << all_messages(diags));
  }
}

TEST_CASE("every negative case reports its expected diagnostic at its location") {
  std::vector<fs::path> files = tsr_files(VERIFY_CASES_DIR);
  CHECK(files.size() >= 25);
  for (const fs::path& f : files) {
    INFO("case: " << f.filename().string());
    Expectation want;
    REQUIRE_MESSAGE(read_expectation(f, want), "first line must be '# expect: LINE:COL: message'");
    Module m;
    try {
      m = parse_file(f.string());
    } catch (const Error& e) {
      FAIL_CHECK("the case must parse (the verifier, not the parser, should reject it): " << e.formatted());
      continue;
    }
    std::vector<Diagnostic> diags = verify_module(m);
    bool found = std::any_of(diags.begin(), diags.end(), [&](const Diagnostic& d) {
      return d.loc.line == want.line && d.loc.col == want.col && d.message.find(want.message) != std::string::npos;
    });
    CHECK_MESSAGE(found, "expected " << want.line << ":" << want.col << ": " << want.message << "\ngot:\n"
                                     << all_messages(diags));
  }
}

TEST_CASE("verify_or_throw reports the first diagnostic as an Error") {
  Module bad = parse_file(std::string(VERIFY_CASES_DIR) + "/grid_zero.tsr");
  CHECK_THROWS_AS(verify_or_throw(bad), Error);
  std::vector<fs::path> examples = tsr_files(testing::examples_dir());
  REQUIRE(!examples.empty());
  Module good = parse_file(testing::example_path("add.tsr").string());
  CHECK_NOTHROW(verify_or_throw(good));
}

TEST_CASE("context rules: every control and Pallas primitive says what it needs from the ops around it") {
  const auto& rules = verify_detail::context_rules();
  std::string missing, not_checked;
  int checked = 0;
  for (Family f : {Family::control, Family::pallas})
    for (const Primitive* p : registry().of(f)) {
      const verify_detail::ContextRule* r = rules.find(*p);
      if (!r) {
        missing += " " + p->name;
        continue;
      }
      bool has_check = r->params || r->in_context || r->enter;
      CHECK_MESSAGE(has_check != (r->not_checked != nullptr), p->name, ": either checks or a reason, not both");
      if (r->not_checked) not_checked += "\n  " + p->name + ": " + r->not_checked;
      else ++checked;
    }
  CHECK_MESSAGE(missing.empty(), "no verifier context entry for:", missing);
  CHECK(checked == 9);  // axis_index, axis_size, program_id, num_programs, dma_start, semaphore_signal, pmap, core_map, pallas_call
  MESSAGE("not checked against their context:" << not_checked);
  // Elementwise, reduction, structural and state ops are context-free by family.
  for (Family f : {Family::elementwise, Family::reduction, Family::structural, Family::state})
    for (const Primitive* p : registry().of(f)) CHECK_MESSAGE(!rules.find(*p), p->name);
}
