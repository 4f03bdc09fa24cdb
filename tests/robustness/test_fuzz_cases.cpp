// The fuzz checks (fuzz/checks.h) in the normal test suite, without libFuzzer:
//   - every input a fuzz campaign found a bug with (fuzz_cases/*.tsr, each
//     named after what it broke; docs/fuzzing.md lists them) passes every
//     check now: one fails again if its bug comes back;
//   - every seed of the fuzz corpora (examples/*.tsr and the .tsr files under
//     tests/, as scripts/fuzz.sh collects them) passes every check, so a
//     campaign starts from inputs that are not bugs already;
//   - the fuzzers' dictionary (fuzz/tsr.dict) names every primitive.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "fuzz/checks.h"
#include "ir/primitive.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using tessera::testing::read_file;

namespace {

std::vector<fs::path> tsr_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".tsr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Every check on every file; returns how many files there were.
size_t check_all(const std::vector<fs::path>& files) {
  for (const fs::path& f : files) {
    std::string text = read_file(f);
    for (const tessera::fuzz::Target& t : tessera::fuzz::targets()) {
      std::string bug = t.check(text);
      CHECK_MESSAGE(bug.empty(), f.string() << " (fuzz_" << std::string(t.name) << "): " << bug);
    }
  }
  return files.size();
}

}  // namespace

TEST_CASE("fuzz cases: every input a campaign found a bug with passes every check") {
  CHECK(check_all(tsr_files(TESSERA_FUZZ_CASES_DIR)) >= 1);
}

TEST_CASE("fuzz seeds: the examples and the tests' modules pass every check") {
  CHECK(check_all(tsr_files(tessera::testing::examples_dir())) >= 10);
  CHECK(check_all(tsr_files(TESSERA_TESTS_DIR)) >= 50);
}

TEST_CASE("fuzz targets: one per check, found by name") {
  std::vector<std::string> names;
  for (const tessera::fuzz::Target& t : tessera::fuzz::targets()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"parse", "passes", "run", "prove", "import"});
  CHECK(std::string(tessera::fuzz::target("prove").name) == "prove");
  CHECK_THROWS_AS(tessera::fuzz::target("nope"), std::invalid_argument);
}

TEST_CASE("fuzz dictionary: every primitive and parameter name is an entry") {
  std::string dict = read_file(TESSERA_FUZZ_DICT);
  for (const tessera::Primitive* p : tessera::registry().all()) {
    CHECK_MESSAGE(dict.find("\"" + p->name + "\"") != std::string::npos, "fuzz/tsr.dict lacks \"" << p->name << "\"");
    for (const tessera::ParamSpec& s : p->params)
      CHECK_MESSAGE(dict.find("\"" + s.name + "=\"") != std::string::npos, "fuzz/tsr.dict lacks \"" << s.name << "=\"");
  }
}
