// What a fuzz target checks on one input (docs/fuzzing.md).
//
// tessera's contract for bad input is a tessera::Error, located at the text
// the parser and the verifier were given; anything else is a bug. Each check
// runs one part of the tool chain on one input and returns "" when tessera
// kept the contract (it succeeded, or threw a tessera::Error located where it
// must be), else a description of the broken rule. Crashes, sanitizer
// reports, hangs and running out of memory are what libFuzzer itself catches.
//
// The same checks run twice: in the libFuzzer targets (fuzz/fuzz_target.cpp,
// built with -Dfuzz=true), which abort on a bug so that the fuzzer records the
// input, and in the normal test suite (tests/robustness/test_fuzz_cases.cpp),
// which runs every input a campaign found a bug with through every check.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::fuzz {

// Parses and verifies; a module that verifies must print, parse back and
// verify again, and print to the same text.
std::string check_parse(std::string_view text);
// Every module that verifies through jvp, vmap, discharge, dce, linearize and
// the chain jvp,vmap,discharge,dce: each either throws a tessera::Error or
// gives a module that verifies and prints, parses back and prints the same.
std::string check_passes(std::string_view text);
// Every module that verifies with an @main taking arrays runs in the
// interpreter on random inputs, under a step and a memory limit.
std::string check_run(std::string_view text);
// Every module that verifies goes through the prover with a low Z3 resource limit.
std::string check_prove(std::string_view text);
// Imports the input as Mosaic TPU text (frontends/mosaic/): it throws a
// tessera::Error located in the input, or gives a module that verifies and
// prints, parses back and prints the same.
std::string check_import(std::string_view text);

struct Target {
  const char* name;  // the fuzz executable is fuzz_<name>
  std::string (*check)(std::string_view text);
};
// Every target, in the order scripts/fuzz.sh runs them.
const std::vector<Target>& targets();
// The target called `name`; throws std::invalid_argument for an unknown one.
const Target& target(std::string_view name);

}  // namespace tessera::fuzz
