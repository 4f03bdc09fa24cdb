// compute_cost over grids whose sizes are known only at run time.
//
// Every figure the walk counts is a sum over grid points and block copies,
// and for the kernels tessera writes it is multilinear in each dynamic size:
// points are a product of sizes, and an input block that changes with the
// axes up to a of the grid is copied once per prefix (n_0 * ... * n_a). A
// multilinear polynomial in d sizes is fixed by its values at the 2^d corners
// of {2, 3}^d; two more counts, at sizes no corner used, check that the
// figures really have that form. Size 1 is left out on purpose: an axis of
// size 1 never moves, so a block that changes with it is copied once, not
// once per step -- the polynomial holds for sizes of 2 and more.
#include <array>

#include "analysis/cost/walk.h"

namespace tessera::cost {
namespace {

constexpr int kMaxDynamicSizes = 8;  // 2^8 walks at most

using Field = int64_t CostFigures::*;
constexpr std::array<Field, 5> kFields = {&CostFigures::flops, &CostFigures::transcendentals, &CostFigures::bytes_in,
                                          &CostFigures::bytes_out, &CostFigures::bytes_dma};

int popcount(unsigned x) {
  int n = 0;
  for (; x; x &= x - 1) ++n;
  return n;
}

// The coefficients, per subset U of the sizes (a bit mask), of the
// multilinear polynomial whose value at the corner "size a is 3 for a in T,
// else 2" is at[T]. In the basis y_a = n_a - 2 the coefficient of
// prod_{a in S} y_a is the Moebius sum over T in S; expanding each
// y_a = n_a - 2 back gives the coefficients in the sizes themselves.
std::vector<CostFigures> fit(const std::vector<CostFigures>& at) {
  const unsigned corners = static_cast<unsigned>(at.size());
  std::vector<CostFigures> b(corners), c(corners);
  for (unsigned s = 0; s < corners; ++s)
    for (unsigned t = s;; t = (t - 1) & s) {  // every T within S
      int64_t sign = (popcount(s & ~t) % 2) ? -1 : 1;
      for (Field f : kFields) b[s].*f += sign * (at[t].*f);
      if (t == 0) break;
    }
  for (unsigned u = 0; u < corners; ++u)
    for (unsigned s = u; s < corners; s = (s + 1) | u) {  // every S containing U
      int64_t factor = 1;  // (-2)^|S \ U|
      for (int k = popcount(s & ~u); k > 0; --k) factor *= -2;
      for (Field f : kFields) c[u].*f += factor * (b[s].*f);
    }
  return c;
}

std::vector<SizeTerm> terms_of(const std::vector<CostFigures>& coefficients) {
  std::vector<SizeTerm> terms;
  for (unsigned u = 0; u < coefficients.size(); ++u) {
    if (u != 0 && coefficients[u] == CostFigures{}) continue;
    SizeTerm t;
    for (int a = 0; (1u << a) <= u; ++a)
      if (u & (1u << a)) t.sizes.push_back(a);
    t.figures = coefficients[u];
    terms.push_back(std::move(t));
  }
  return terms;
}

std::string size_name(const Var* v, size_t k) {
  return "%" + (v->name.empty() ? "size" + std::to_string(k) : v->name);
}

// Figures per kernel op (null: outside kernels) of one walk.
const KernelCost& kernel_of(const CostReport& r, const Op* op) {
  if (!op) return r.outside;
  for (const KernelCost& k : r.kernels)
    if (k.op == op) return k;
  throw Error(op->loc, "cost: this kernel runs only at some values of the dynamic grid sizes");
}

}  // namespace

CostFigures evaluate(const std::vector<SizeTerm>& terms, const std::vector<int64_t>& sizes) {
  CostFigures total;
  for (const SizeTerm& t : terms) {
    int64_t product = 1;
    for (int a : t.sizes) product *= sizes.at(static_cast<size_t>(a));
    for (Field f : kFields) total.*f += product * (t.figures.*f);
  }
  return total;
}

CostReport compute_cost(const Module& m, const Body& f, const CostOptions& opts) {
  DynamicSizes probe;
  CostReport base = walk_cost(m, f, opts, probe);
  if (probe.seen.empty()) return base;
  const std::vector<const Var*> vars = probe.seen;
  const size_t d = vars.size();
  if (d > static_cast<size_t>(kMaxDynamicSizes))
    throw Error(f.loc(), "cost: figures over more than " + std::to_string(kMaxDynamicSizes) +
                             " dynamic grid sizes are not supported");
  auto walk_at = [&](const std::vector<int64_t>& values) {
    DynamicSizes sizes;
    for (size_t a = 0; a < d; ++a) sizes.given[vars[a]] = values[a];
    CostReport r = walk_cost(m, f, opts, sizes);
    if (sizes.seen.size() != d)
      throw Error(f.loc(), "cost: which grid sizes are dynamic depends on the values of other dynamic grid sizes");
    return r;
  };
  const unsigned corners = 1u << d;
  std::vector<CostReport> at;
  for (unsigned t = 0; t < corners; ++t) {
    std::vector<int64_t> values(d);
    for (size_t a = 0; a < d; ++a) values[a] = (t >> a) & 1u ? 3 : 2;
    at.push_back(walk_at(values));
  }
  // Two checks at sizes no corner used, different for every size.
  std::vector<std::vector<int64_t>> checks(2, std::vector<int64_t>(d));
  for (size_t a = 0; a < d; ++a) {
    checks[0][a] = 4 + static_cast<int64_t>(a);
    checks[1][a] = 9 + 2 * static_cast<int64_t>(a);
  }
  std::vector<CostReport> checked;
  for (const auto& values : checks) checked.push_back(walk_at(values));

  auto fitted = [&](KernelCost k) {
    std::vector<CostFigures> corner_figures;
    for (const CostReport& r : at) {
      const KernelCost& c = kernel_of(r, k.op);
      if (c.runs != k.runs)
        throw Error(k.op ? k.op->loc : f.loc(), "cost: how many times this kernel runs depends on the dynamic grid sizes");
      corner_figures.push_back(c.figures);
    }
    k.terms = terms_of(fit(corner_figures));
    k.figures = k.terms.front().figures;
    for (size_t i = 0; i < checks.size(); ++i)
      if (!(kernel_of(checked[i], k.op).figures == evaluate(k.terms, checks[i])))
        throw Error(k.op ? k.op->loc : f.loc(),
                    "cost: the figures of this kernel are not a sum of products of the dynamic grid sizes (each to "
                    "the power 1 at most): a loop or a copy counted per grid point per grid point?");
    return k;
  };
  CostReport r;
  r.function = base.function;
  for (size_t a = 0; a < d; ++a) r.sizes.push_back(size_name(vars[a], a));
  r.outside = fitted(base.outside);
  for (const KernelCost& k : base.kernels) r.kernels.push_back(fitted(k));
  return r;
}

std::vector<SizeTerm> CostReport::total_terms() const {
  std::vector<SizeTerm> all = outside.terms;
  for (const KernelCost& k : kernels)
    for (const SizeTerm& t : k.terms) {
      auto same = std::find_if(all.begin(), all.end(), [&](const SizeTerm& x) { return x.sizes == t.sizes; });
      if (same == all.end())
        all.push_back(t);
      else
        same->figures += t.figures;
    }
  std::sort(all.begin(), all.end(), [](const SizeTerm& a, const SizeTerm& b) {
    return a.sizes.size() != b.sizes.size() ? a.sizes.size() < b.sizes.size() : a.sizes < b.sizes;
  });
  return all;
}

}  // namespace tessera::cost
