// `tessera prove FILE`: formal checks of every pallas_call (docs/prove.md).
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "analysis/prove/prove.h"
#include "interpreter/block_map.h"
#include "tools/args.h"
#include "tools/block_map_svg.h"
#include "tools/block_pictures.h"
#include "tools/commands.h"

namespace tessera::cli {

namespace {

// The module's source text, for `# prove: assume ...` lines ("" for stdin).
std::string source_text(const std::string& path) {
  if (path == "-") return "";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `matmul out[0] non-revisiting` -> `matmul-out0-non-revisiting`: a file name.
std::string claim_file_name(const prove::Obligation& o) {
  std::string s;
  for (char c : o.call + "-" + o.subject + "-" + o.kind) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') s += c;
    else if (c == ' ' || c == '#') s += '-';
  }
  return s;
}

// Claims about blocks: their counterexample is a grid point and its block.
bool about_blocks(const prove::Obligation& o) {
  return o.verdict == prove::Verdict::failed && o.subject != "kernel" && !o.grid_points.empty() && o.op &&
         o.op->name() == "pallas_call" && (o.kind == "bounds" || o.kind == "non-revisiting" || o.kind == "parallel safety");
}

// `--svg DIR`: the block map of each failed claim about blocks, with its
// counterexample marked. Returns the paths written; a claim that cannot be
// drawn gets a note on stderr.
std::vector<std::string> draw_counterexamples(const Module& m, const std::vector<prove::Obligation>& obs,
                                              const std::string& dir, const std::map<std::string, std::string>& inputs) {
  std::vector<std::string> written;
  std::map<const Op*, interp::BlockMap> maps;
  for (const prove::Obligation& o : obs) {
    if (!about_blocks(o)) continue;
    try {
      auto it = maps.find(o.op);
      if (it == maps.end())
        it = maps.emplace(o.op, interp::block_map(m, *o.op, o.call, prefetch_values(*o.op, o.call, inputs))).first;
      BlockMapHighlight hl{o.subject, o.grid_points, {o.line()}};
      std::filesystem::create_directories(dir);
      std::string path = (std::filesystem::path(dir) / (claim_file_name(o) + ".svg")).string();
      std::ofstream f(path, std::ios::binary);
      f << block_map_svg(it->second, &hl);
      f.close();
      if (!f) throw Error("cannot write " + path);
      written.push_back(path);
    } catch (const Error& e) {
      std::cerr << "note: not drawing '" << o.call << " " << o.subject << " " << o.kind << "': " << e.formatted() << "\n";
    } catch (const std::filesystem::filesystem_error& e) {
      std::cerr << "note: not drawing '" << o.call << " " << o.subject << " " << o.kind << "': " << e.what() << "\n";
    }
  }
  return written;
}

}  // namespace

int cmd_prove(const Argv& argv) {
  Args a("prove",
         "Proves, for every pallas_call, that block indices stay in bounds, output blocks are never revisited in any\n"
         "grid order the interpreter may use, parallel grid axes never write the same output block, and kernel Ref\n"
         "accesses stay in bounds. One line per obligation: proved, FAILED (with a counterexample) or unknown (with\n"
         "the reason). Exit 0: all proved; 1: some failed; 3: none failed, some unknown.\n"
         "Ranges may also be declared in the file, as comment lines `# prove: assume NAME in [lo, hi)`.",
         "FILE");
  a.flag("--func", "NAME", "only the pallas_calls reachable from function NAME (default: every function)");
  a.flag("--timeout-ms", "N", "wall-clock backstop per Z3 query", std::to_string(prove::Options{}.timeout_ms));
  a.flag("--rlimit", "N", "Z3 deterministic resource limit per query (0 = none)", std::to_string(prove::Options{}.rlimit));
  a.repeated("--assume", "'NAME in [lo, hi)'", "range of a scalar prefetch operand or dynamic grid size, by name");
  a.toggle("--json", "print the verdicts as JSON");
  a.flag("--smt2", "DIR", "write every Z3 query as an SMT-LIB2 file into DIR");
  a.toggle("--no-intervals", "ask Z3 even where interval bounds settle an obligation");
  a.flag("--svg", "DIR",
         "for each failed claim about blocks (bounds, non-revisiting, parallel safety), write the call's block map\n"
         "with the counterexample marked to DIR/<claim>.svg, and print the paths (docs/pictures.md)");
  a.repeated("--input", "NAME=PATH.npy", "with --svg: the values of a scalar-prefetch operand the index maps read");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera prove takes one FILE\n";
    return 1;
  }
  const std::string& path = a.positionals()[0];
  prove::Options opts;
  try {
    opts.func = a.get("--func");
    opts.timeout_ms = static_cast<unsigned>(std::stoul(a.get("--timeout-ms")));
    opts.rlimit = static_cast<unsigned>(std::stoul(a.get("--rlimit")));
  } catch (const std::exception&) {
    std::cerr << "error: --timeout-ms and --rlimit take non-negative integers\n";
    return 1;
  }
  opts.smt2_dir = a.get("--smt2");
  opts.use_intervals = !a.has("--no-intervals");
  auto m = load_module(path);
  if (!m) return 1;
  opts.assumptions = prove::assumptions_in_source(source_text(path));
  for (const std::string& s : a.all("--assume")) opts.assumptions.push_back(prove::parse_assumption(s));
  std::vector<prove::Obligation> obs = prove::prove_module(*m, opts);
  if (a.has("--json")) {
    std::cout << prove::to_json(obs);
  } else {
    for (const prove::Obligation& o : obs) std::cout << o.line() << "\n";
    if (obs.empty()) std::cout << "no pallas_call or core_map to prove\n";
  }
  if (a.has("--svg")) {
    std::map<std::string, std::string> inputs;
    try {
      inputs = named_inputs(a.all("--input"));
    } catch (const Error& e) {
      std::cerr << e.formatted() << "\n";
      return 1;
    }
    for (const std::string& written : draw_counterexamples(*m, obs, a.get("--svg"), inputs))
      (a.has("--json") ? std::cerr : std::cout) << "wrote " << written << "\n";
  }
  return prove::exit_code(obs);
}

}  // namespace tessera::cli
