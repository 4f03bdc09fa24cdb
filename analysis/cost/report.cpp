// Printing a CostReport (text and --json) and checking a pallas_call's own
// cost_estimate against it.
#include <cstdio>

#include "analysis/cost/cost.h"
#include "ir/json.h"

namespace tessera::cost {
namespace {

std::string fixed2(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

std::string ints_list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string figures_line(const CostFigures& f) { return "  " + figures_str(f) + "; " + fixed2(intensity(f)) + " flops/byte\n"; }

std::string json_figures(const CostFigures& f) {
  return "\"flops\": " + std::to_string(f.flops) + ", \"transcendentals\": " + std::to_string(f.transcendentals) +
         ", \"bytes_in\": " + std::to_string(f.bytes_in) + ", \"bytes_out\": " + std::to_string(f.bytes_out) +
         ", \"bytes_dma\": " + std::to_string(f.bytes_dma) + ", \"intensity\": " + fixed2(intensity(f));
}

std::string json_kernel(const KernelCost& k) {
  std::string s = "{";
  if (k.op) {
    s += "\"call\": " + json_quote(k.call) + ", \"op\": " + json_quote(k.name) + ", ";
    if (!k.grid.empty()) s += "\"grid\": [" + ints_list(k.grid) + "], ";
    s += "\"runs\": " + std::to_string(k.runs) + ", ";
  }
  s += json_figures(k.figures) + ", \"exact\": " + (k.exact ? "true" : "false") + ", \"notes\": [";
  for (size_t i = 0; i < k.notes.size(); ++i) s += (i ? ", " : "") + json_quote(k.notes[i]);
  return s + "]}";
}

// Whether a and b differ by more than kEstimateFactor (zero against non-zero does).
bool far_apart(int64_t a, int64_t b) {
  if (a == b) return false;
  int64_t lo = std::min(a, b), hi = std::max(a, b);
  return lo <= 0 || static_cast<double>(hi) > kEstimateFactor * static_cast<double>(lo);
}

}  // namespace

double intensity(const CostFigures& f) {
  return f.bytes() == 0 ? 0.0 : static_cast<double>(f.flops) / static_cast<double>(f.bytes());
}

std::string format_report(const CostReport& r) {
  std::string s;
  auto notes = [&](const KernelCost& k) {
    for (const std::string& n : k.notes) s += "  upper bound: " + n + "\n";
  };
  for (const KernelCost& k : r.kernels) {
    s += k.call + ": " + k.name;
    if (!k.grid.empty()) s += ", grid (" + ints_list(k.grid) + ")";
    s += ", " + std::to_string(k.runs) + (k.runs == 1 ? " run\n" : " runs\n");
    s += figures_line(k.figures);
    notes(k);
  }
  s += "outside kernels:\n" + figures_line(r.outside.figures);
  notes(r.outside);
  s += std::string("total") + (r.exact() ? "" : " (an upper bound)") + ":\n" + figures_line(r.total());
  return s;
}

std::string json_report(const CostReport& r) {
  std::string s = "{\"function\": " + json_quote(r.function) + ", \"exact\": " + (r.exact() ? "true" : "false") +
                  ",\n \"kernels\": [";
  for (size_t i = 0; i < r.kernels.size(); ++i) s += (i ? ",\n  " : "\n  ") + json_kernel(r.kernels[i]);
  s += "],\n \"outside\": " + json_kernel(r.outside) + ",\n \"total\": {" + json_figures(r.total()) + "}}\n";
  return s;
}

std::vector<EstimateMismatch> check_estimates(const CostReport& r) {
  std::vector<EstimateMismatch> out;
  for (const KernelCost& k : r.kernels) {
    if (!k.op || k.op->name() != "pallas_call" || k.runs <= 0) continue;
    const std::vector<int64_t>& est = k.op->ints_param("cost_estimate");
    if (est.size() < 3) continue;
    const int64_t computed[3] = {k.figures.flops / k.runs, k.figures.transcendentals / k.runs, k.figures.bytes() / k.runs};
    const char* what[3] = {"flops", "transcendentals", "bytes_accessed"};
    for (int i = 0; i < 3; ++i)
      if (far_apart(est[static_cast<size_t>(i)], computed[i]))
        out.push_back({k.op, std::string("cost_estimate ") + what[i] + " " + std::to_string(est[static_cast<size_t>(i)]) +
                                 " differs from the computed " + std::to_string(computed[i]) +
                                 " (per run) by more than a factor of " + fixed2(kEstimateFactor).substr(0, 1)});
  }
  return out;
}

}  // namespace tessera::cost
