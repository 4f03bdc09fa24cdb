#include "analysis/prove/solver.h"

#include <filesystem>
#include <fstream>

#include "ir/diagnostics.h"

namespace tessera::prove {

Solver::Solver(z3::context& ctx, unsigned timeout_ms, unsigned rlimit, std::string smt2_dir, std::string call)
    : ctx_(ctx), timeout_ms_(timeout_ms), rlimit_(rlimit), smt2_dir_(std::move(smt2_dir)), call_(std::move(call)) {}

namespace {

std::string file_safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return out;
}

}  // namespace

// Which limit stopped Z3: the deterministic resource limit is meant to fire
// first; the wall clock is a backstop whose verdict may differ between machines.
std::string Solver::limit_reason(const std::string& z3_reason) const {
  if (z3_reason.find("resource") != std::string::npos || z3_reason.find("rlimit") != std::string::npos)
    return "resource limit rlimit=" + std::to_string(rlimit_) + " reached";
  if (z3_reason.find("timeout") != std::string::npos || z3_reason.find("canceled") != std::string::npos)
    return "time-out after " + std::to_string(timeout_ms_) + " ms: this verdict may differ on another machine";
  return "Z3 gave up: " + z3_reason;
}

QueryResult Solver::check(const std::vector<z3::expr>& assertions, const std::string& label) {
  ++queries_;
  z3::solver s(ctx_);
  z3::params p(ctx_);
  if (timeout_ms_) p.set("timeout", timeout_ms_);
  if (rlimit_) p.set("rlimit", rlimit_);
  s.set(p);
  for (const z3::expr& a : assertions) s.add(a);
  if (!smt2_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(smt2_dir_, ec);
    std::string path = smt2_dir_ + "/" + file_safe(call_) + "." + file_safe(label) + "." + std::to_string(queries_) + ".smt2";
    std::ofstream f(path);
    if (!f) throw Error("cannot write " + path);
    f << "; tessera prove: " << call_ << " " << label << "\n"
      << "; sat = a counterexample exists; unsat = the obligation holds\n"
      << s.to_smt2() << "(get-model)\n";
  }
  QueryResult r;
  try {
    r.result = s.check();
  } catch (const z3::exception& e) {
    r.result = z3::unknown;
    r.reason = "Z3 error: " + std::string(e.msg());
    return r;
  }
  if (r.result == z3::sat) r.model = s.get_model();
  if (r.result == z3::unknown) r.reason = limit_reason(s.reason_unknown());
  return r;
}

}  // namespace tessera::prove
