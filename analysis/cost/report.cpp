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

// A grid as the text format writes it: "?" for a size known at run time.
std::string grid_list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + (v[i] < 0 ? std::string("?") : std::to_string(v[i]));
  return s;
}

std::string figures_line(const CostFigures& f) { return "  " + figures_str(f) + "; " + fixed2(intensity(f)) + " flops/byte\n"; }

// One figure as a polynomial in the sizes: "2048*%n + 16", "0".
std::string polynomial(const std::vector<SizeTerm>& terms, int64_t CostFigures::*field,
                       const std::vector<std::string>& names) {
  std::string s;
  for (const SizeTerm& t : terms) {
    int64_t c = t.figures.*field;
    if (c == 0) continue;
    std::string product;
    for (int a : t.sizes) product += (product.empty() ? "" : "*") + names[static_cast<size_t>(a)];
    std::string term = product.empty() ? std::to_string(c) : c == 1 ? product : std::to_string(c) + "*" + product;
    s += (s.empty() ? "" : " + ") + term;
  }
  return s.empty() ? "0" : s;
}

// figures_line for figures that depend on dynamic grid sizes.
std::string terms_line(const std::vector<SizeTerm>& terms, const std::vector<std::string>& names) {
  return "  flops " + polynomial(terms, &CostFigures::flops, names) + ", transcendentals " +
         polynomial(terms, &CostFigures::transcendentals, names) + ", bytes in " +
         polynomial(terms, &CostFigures::bytes_in, names) + ", out " + polynomial(terms, &CostFigures::bytes_out, names) +
         ", dma " + polynomial(terms, &CostFigures::bytes_dma, names) + "\n";
}

std::string json_terms(const std::vector<SizeTerm>& terms, const std::vector<std::string>& names) {
  std::string s = "\"terms\": [";
  for (size_t i = 0; i < terms.size(); ++i) {
    s += std::string(i ? ", " : "") + "{\"sizes\": [";
    for (size_t k = 0; k < terms[i].sizes.size(); ++k)
      s += (k ? ", " : "") + json_quote(names[static_cast<size_t>(terms[i].sizes[k])]);
    const CostFigures& f = terms[i].figures;
    s += "], \"flops\": " + std::to_string(f.flops) + ", \"transcendentals\": " + std::to_string(f.transcendentals) +
         ", \"bytes_in\": " + std::to_string(f.bytes_in) + ", \"bytes_out\": " + std::to_string(f.bytes_out) +
         ", \"bytes_dma\": " + std::to_string(f.bytes_dma) + "}";
  }
  return s + "]";
}

std::string json_figures(const CostFigures& f) {
  return "\"flops\": " + std::to_string(f.flops) + ", \"transcendentals\": " + std::to_string(f.transcendentals) +
         ", \"bytes_in\": " + std::to_string(f.bytes_in) + ", \"bytes_out\": " + std::to_string(f.bytes_out) +
         ", \"bytes_dma\": " + std::to_string(f.bytes_dma) + ", \"intensity\": " + fixed2(intensity(f));
}

std::string json_kernel(const KernelCost& k, const std::vector<std::string>& names) {
  std::string s = "{";
  if (k.op) {
    s += "\"call\": " + json_quote(k.call) + ", \"op\": " + json_quote(k.name) + ", ";
    if (!k.grid.empty()) s += "\"grid\": [" + ints_list(k.grid) + "], ";
    s += "\"runs\": " + std::to_string(k.runs) + ", ";
  }
  s += (names.empty() ? json_figures(k.figures) : json_terms(k.terms, names)) + ", \"exact\": " +
       (k.exact ? "true" : "false") + ", \"notes\": [";
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
  auto line = [&](const KernelCost& k) { return r.sizes.empty() ? figures_line(k.figures) : terms_line(k.terms, r.sizes); };
  for (const KernelCost& k : r.kernels) {
    s += k.call + ": " + k.name;
    if (!k.grid.empty()) s += ", grid (" + grid_list(k.grid) + ")";
    s += ", " + std::to_string(k.runs) + (k.runs == 1 ? " run\n" : " runs\n");
    s += line(k);
    notes(k);
  }
  s += "outside kernels:\n" + line(r.outside);
  notes(r.outside);
  s += std::string("total") + (r.exact() ? "" : " (an upper bound)") + ":\n";
  if (r.sizes.empty()) return s + figures_line(r.total());
  s += terms_line(r.total_terms(), r.sizes);
  std::string names;
  for (const std::string& n : r.sizes) names += (names.empty() ? "" : ", ") + n;
  return s + "for dynamic grid sizes " + names + " of 2 or more\n";
  return s;
}

std::string json_report(const CostReport& r) {
  std::string s = "{\"function\": " + json_quote(r.function) + ", \"exact\": " + (r.exact() ? "true" : "false");
  if (!r.sizes.empty()) {
    s += ",\n \"sizes\": [";
    for (size_t i = 0; i < r.sizes.size(); ++i) s += (i ? ", " : "") + json_quote(r.sizes[i]);
    s += "]";
  }
  s += ",\n \"kernels\": [";
  for (size_t i = 0; i < r.kernels.size(); ++i) s += (i ? ",\n  " : "\n  ") + json_kernel(r.kernels[i], r.sizes);
  s += "],\n \"outside\": " + json_kernel(r.outside, r.sizes) + ",\n \"total\": {" +
       (r.sizes.empty() ? json_figures(r.total()) : json_terms(r.total_terms(), r.sizes)) + "}}\n";
  return s;
}

std::vector<EstimateMismatch> check_estimates(const CostReport& r) {
  std::vector<EstimateMismatch> out;
  for (const KernelCost& k : r.kernels) {
    if (!k.op || k.op->name() != "pallas_call" || k.runs <= 0) continue;
    if (k.terms.size() > 1) continue;  // figures that grow with a dynamic grid: no one number to compare
    const std::vector<int64_t>& est = k.op->param(keys::cost_estimate);
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
