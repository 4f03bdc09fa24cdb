#include "tools/args.h"

#include <iostream>

namespace tessera::cli {

Args::Args(std::string command, std::string summary, std::string positional_help)
    : command_(std::move(command)), summary_(std::move(summary)), positional_help_(std::move(positional_help)) {}

void Args::flag(std::string name, std::string metavar, std::string help, std::string default_value) {
  opts_.push_back({std::move(name), std::move(metavar), std::move(help), std::move(default_value), Opt::Flag});
}
void Args::repeated(std::string name, std::string metavar, std::string help) {
  opts_.push_back({std::move(name), std::move(metavar), std::move(help), "", Opt::Repeated});
}
void Args::toggle(std::string name, std::string help) {
  opts_.push_back({std::move(name), "", std::move(help), "", Opt::Toggle});
}

const Args::Opt* Args::find(const std::string& name) const {
  for (const Opt& o : opts_)
    if (o.name == name) return &o;
  return nullptr;
}

bool Args::parse(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << usage();
      exit_code_ = 0;
      return false;
    }
    if (a == "--") {  // everything after is positional, even "-x"
      positionals_.insert(positionals_.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    // "-" alone is stdin; "--name" and "-x" are options (a short one such as
    // `-o` only when the command declares it).
    if (a.size() > 1 && a[0] == '-') {
      std::string name = a, value;
      bool inline_value = false;
      if (size_t eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      const Opt* o = find(name);
      if (!o) {
        std::cerr << "error: unknown option " << name << " for 'tessera " << command_ << "' (see --help)\n";
        exit_code_ = 1;
        return false;
      }
      if (o->kind == Opt::Toggle) {
        if (inline_value) {
          std::cerr << "error: " << name << " takes no value\n";
          exit_code_ = 1;
          return false;
        }
        values_[name].push_back("1");
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= argv.size()) {
          std::cerr << "error: " << name << " needs a value " << o->metavar << "\n";
          exit_code_ = 1;
          return false;
        }
        value = argv[++i];
      }
      if (o->kind == Opt::Flag) values_[name] = {value};
      else values_[name].push_back(value);
      continue;
    }
    positionals_.push_back(a);
  }
  return true;
}

bool Args::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  const Opt* o = find(name);
  return o ? o->default_value : "";
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::usage() const {
  std::string out = "usage: tessera " + command_ + " [options] " + positional_help_ + "\n\n" + summary_ + "\n";
  if (positional_help_.find("FILE") != std::string::npos) out += "A FILE of '-' reads the module from stdin.\n";
  out += "\noptions:\n";
  out += "  -h, --help                  print this help and exit\n";
  for (const Opt& o : opts_) {
    std::string left = "  " + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    if (left.size() < 30) left += std::string(30 - left.size(), ' ');
    else left += "\n" + std::string(30, ' ');
    std::string help = o.help;  // continuation lines line up under the first
    for (size_t at = help.find('\n'); at != std::string::npos; at = help.find('\n', at + 1))
      help.insert(at + 1, std::string(30, ' '));
    out += left + help;
    if (!o.default_value.empty()) out += " (default: " + o.default_value + ")";
    out += "\n";
  }
  return out;
}

}  // namespace tessera::cli
