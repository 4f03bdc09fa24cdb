// A small command-line parser shared by the `tessera` subcommands.
//
//   Args a("run", "Runs a kernel in the reference interpreter.", "FILE");
//   a.flag("--func", "NAME", "entry function (default main)", "main");
//   a.repeated("--input", "NAME=PATH.npy", "an input by parameter name");
//   a.toggle("--detect-races", "report data races");
//   if (!a.parse(argv_tail)) return a.exit_code();   // --help or a usage error
//   a.get("--func"); a.has("--detect-races"); a.all("--input"); a.positionals();
//
// Values come as `--flag VALUE` or `--flag=VALUE`; `-` is a positional (stdin);
// after `--` everything is positional. A flag may have a short name (`-o`);
// any other `-x` is an unknown option.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tessera::cli {

class Args {
 public:
  Args(std::string command, std::string summary, std::string positional_help);

  void flag(std::string name, std::string metavar, std::string help, std::string default_value = "");
  void repeated(std::string name, std::string metavar, std::string help);
  void toggle(std::string name, std::string help);

  // False on --help (usage printed to stdout, exit code 0) or on a usage error
  // (message on stderr, exit code 1).
  bool parse(const std::vector<std::string>& argv);
  int exit_code() const { return exit_code_; }

  bool has(const std::string& name) const;                 // toggle set or flag given
  std::string get(const std::string& name) const;          // value or default
  std::vector<std::string> all(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::string usage() const;

 private:
  struct Opt {
    std::string name, metavar, help, default_value;
    enum Kind { Flag, Repeated, Toggle } kind;
  };
  std::string command_, summary_, positional_help_;
  std::vector<Opt> opts_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
  int exit_code_ = 0;
  const Opt* find(const std::string& name) const;
};

}  // namespace tessera::cli
