// Verdicts as text lines, JSON and an exit status.
#include <cstdio>

#include "analysis/prove/prove.h"
#include "ir/json.h"

namespace tessera::prove {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::proved: return "proved";
    case Verdict::failed: return "FAILED";
    case Verdict::unknown: return "unknown";
  }
  return "unknown";
}

std::string Obligation::line() const {
  std::string s = call + " " + subject + " " + kind + ": " + std::string(verdict_name(verdict));
  if (verdict != Verdict::proved && !detail.empty()) s += " " + detail;
  return s;
}

int exit_code(const std::vector<Obligation>& obs) {
  bool unknown = false;
  for (const Obligation& o : obs) {
    if (o.verdict == Verdict::failed) return 1;
    unknown |= o.verdict == Verdict::unknown;
  }
  return unknown ? 3 : 0;
}


std::string to_json(const std::vector<Obligation>& obs) {
  std::string s = "{\"obligations\": [";
  for (size_t i = 0; i < obs.size(); ++i) {
    const Obligation& o = obs[i];
    s += i ? ",\n  " : "\n  ";
    s += "{\"call\": " + json_quote(o.call) + ", \"subject\": " + json_quote(o.subject) + ", \"kind\": " + json_quote(o.kind) +
         ", \"verdict\": " + json_quote(o.verdict == Verdict::failed ? "failed" : std::string(verdict_name(o.verdict))) +
         ", \"detail\": " + json_quote(o.detail) + ", \"grid_points\": [";
    for (size_t p = 0; p < o.grid_points.size(); ++p) {
      s += p ? ", [" : "[";
      for (size_t k = 0; k < o.grid_points[p].size(); ++k) s += (k ? ", " : "") + std::to_string(o.grid_points[p][k]);
      s += "]";
    }
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", o.millis);
    s += "], \"method\": " + json_quote(o.method) + ", \"queries\": " + std::to_string(o.queries) + ", \"millis\": " + ms + "}";
  }
  s += obs.empty() ? "],\n" : "\n],\n";
  s += "\"exit_code\": " + std::to_string(exit_code(obs)) + "}\n";
  return s;
}

}  // namespace tessera::prove
