#include "tools/block_map_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "tools/svg_writer.h"

namespace tessera::cli {
namespace {

using interp::BlockMap;
using interp::MappedBlock;
using interp::OperandBlocks;
using Extent = BlockGeometry::Extent;

// Layout, in pixels. A block aims at kCellW x kCellH, a slice at most
// kMaxW x kMaxH (blocks shrink, and drop their labels, past that).
constexpr double kMargin = 16, kLine = 17, kCellW = 76, kCellH = 46, kMaxW = 960, kMaxH = 640;
constexpr double kCharW = 7.3;          // width of one 12px monospace character
constexpr double kLabelLine = 13;       // line height of block labels (11px)
constexpr double kLabelCharW = 6.7;     // width of one 11px label character
constexpr int kMaxStripes = 8;          // colours shown in one block
constexpr int64_t kMaxTiles = 4096;     // blank tiles drawn per slice
constexpr double kMinTilePx = 4;        // smaller tiles: one blank background instead
constexpr double kMinBlockPx = 3;       // smaller blocks are drawn this big
constexpr size_t kMaxSlices = 16;       // leading-dim panels per operand
constexpr size_t kMaxFailureLines = 5;
constexpr size_t kCaptionChars = 120;  // caption lines wrap here

// Grid point n's fill. Colours: Paul Tol's "light" qualitative scheme, made
// for cells that carry black text, without its pale grey (too close to a
// blank tile), ordered so that consecutive grid points differ clearly. Past
// the 8 colours the same ones come back with a second cue, dots and then a
// cross-hatch (padding has the diagonal hatch); the legend, the labels and
// the tooltips tell apart points more than kDistinctFills apart.
constexpr const char* kPalette[] = {"#77aadd", "#ee8866", "#aaaa00", "#99ddff",
                                    "#ffaabb", "#44bb99", "#eedd88", "#bbcc33"};
constexpr int64_t kColours = std::size(kPalette);
constexpr const char* kCues[] = {"", "dots", "cross"};  // "": solid
constexpr int64_t kDistinctFills = kColours * static_cast<int64_t>(std::size(kCues));

std::string fill(int64_t n) {
  int64_t k = n % kDistinctFills, colour = k % kColours, cue = k / kColours;
  if (cue == 0) return kPalette[colour];
  return "url(#" + std::string(kCues[cue]) + "-" + std::to_string(colour) + ")";
}

// The <pattern>s of the cued fills the grid's `points` use: the colour, then
// dark dots or a thin dark cross-hatch over it.
std::string cue_patterns(int64_t points) {
  std::string defs;
  for (int64_t k = kColours; k < std::min(points, kDistinctFills); ++k) {
    std::string colour = kPalette[k % kColours], cue = kCues[k / kColours];
    std::string over = cue == "dots" ? "<circle cx=\"3\" cy=\"3\" r=\"1.1\" fill=\"#444444\"/>"
                                     : "<path d=\"M0 0.5H6M0.5 0V6\" stroke=\"#444444\" stroke-width=\"0.7\"/>";
    defs += "  <pattern id=\"" + cue + "-" + std::to_string(k % kColours) +
            "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" fill=\"" +
            colour + "\"/>" + over + "</pattern>\n";
  }
  return defs;
}

// "(0,1)": compact, to fit inside a block.
std::string label(const std::vector<int64_t>& p) {
  std::string s = "(";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? "," : "") + std::to_string(p[i]);
  return s + ")";
}

// "(4, 3, 2)", as tessera's text format writes a grid
std::string tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// `text` cut into lines of at most `width` characters, at spaces where it can.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string rest = text;
  while (rest.size() > width) {
    size_t cut = rest.rfind(' ', width);
    if (cut == std::string::npos || cut == 0) cut = width;
    lines.push_back(rest.substr(0, cut));
    rest = rest.substr(cut == width ? cut : cut + 1);
  }
  lines.push_back(rest);
  return lines;
}

// A block's flag ("OUT OF BOUNDS") in the first form that fits `chars`
// characters a line: whole, wrapped at spaces (never inside a word), or
// abbreviated.
std::vector<std::string> flag_lines(const std::string& whole, const std::string& abbreviation, size_t chars) {
  if (chars == 0) return {abbreviation};
  std::vector<std::string> lines = wrap(whole, chars);
  return join(lines, " ") == whole ? lines : std::vector<std::string>{abbreviation};
}

// A drawn dimension of a slice: an array dim, or a virtual one of extent 1
// (rows of a rank-1 array, both dims of a rank-0 one).
struct Axis {
  int dim = -1;  // -1: virtual
  DimGeometry geo = dim_geometry(BlockDim::blocked(1), 1);
  Extent of(const MappedBlock& b) const { return dim < 0 ? Extent{0, 1} : b.extent[static_cast<size_t>(dim)]; }
  // Where blank tiles start: a Blocked dim's grid of blocks, a squeezed
  // dim's elements, else one tile over the whole dim.
  int64_t tile() const {
    if (geo.dim.kind == BlockDimKind::Blocked && geo.dim.size > 0) return geo.dim.size;
    if (geo.dim.kind == BlockDimKind::Squeezed) return 1;
    return std::max<int64_t>(geo.padded, 1);
  }
  std::string describe() const {
    if (dim < 0) return "";
    return "dim " + std::to_string(dim) + " (" + std::to_string(geo.extent) + ")";
  }
};

// Maps array coordinates of one slice to pixels.
struct Scale {
  double x0, y0, sx, sy;
  int64_t lo_x, lo_y;
  double x(int64_t v) const { return x0 + static_cast<double>(v - lo_x) * sx; }
  double y(int64_t v) const { return y0 + static_cast<double>(v - lo_y) * sy; }
};

class Drawer {
 public:
  Drawer(const BlockMap& bm, const BlockMapHighlight* hl) : bm_(bm), hl_(hl) {
    if (!hl_) return;
    for (const auto& p : hl_->points)
      if (int64_t n = bm_.number(p); n >= 0) hl_points_.push_back(n);
  }

  std::string draw() {
    defs();
    header();
    legend();
    for (const OperandBlocks& ob : bm_.operands) operand(ob);
    return w_.document(width_ + kMargin, y_ + kMargin);
  }

 private:
  void text(double x, double y, const std::string& s, SvgAttrs extra = {}) {
    SvgAttrs a = {{"x", num(x)}, {"y", num(y)}};
    a.insert(a.end(), extra.begin(), extra.end());
    w_.element("text", a, s);
    width_ = std::max(width_, x + static_cast<double>(s.size()) * kCharW);
  }
  void line(const std::string& s, SvgAttrs extra = {}) {
    y_ += kLine;
    text(kMargin, y_, s, std::move(extra));
  }

  void defs() {
    w_.raw("<defs>\n  <pattern id=\"padding-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ffffff\" fill-opacity=\"0.35\"/>"
           "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#555555\" stroke-width=\"2\"/></pattern>\n" +
           cue_patterns(bm_.num_points()) + "</defs>\n");
  }

  void header() {
    w_.open("g", {{"class", "header"}});
    line("pallas_call " + bm_.call + " (kernel " + bm_.kernel + ")", {{"font-size", "15"}, {"font-weight", "bold"}});
    y_ += 3;
    int rank = static_cast<int>(bm_.grid.size());
    int64_t n = bm_.num_points();
    std::string order = "grid " + tuple(bm_.grid) + ": " + std::to_string(n) + (n == 1 ? " point" : " points");
    auto axis = [&](int d) {
      std::string s = "axis " + std::to_string(d);
      if (d < static_cast<int>(bm_.grid_names.size())) s += " (" + bm_.grid_names[d] + ")";
      return s;
    };
    if (rank > 1) order += ", visited row-major: " + axis(rank - 1) + " varies fastest, " + axis(0) + " slowest";
    line(order, {{"class", "grid-order"}});
    if (!bm_.semantics.empty()) line("dimension_semantics (" + join(bm_.semantics, ", ") + ")");
    if (hl_)
      for (const std::string& c : hl_->caption)
        for (const std::string& l : wrap(c, kCaptionChars))
          line(l, {{"class", "caption"}, {"fill", "#c00000"}, {"font-weight", "bold"}});
    if (hl_)
      line("in " + hl_->subject + ", the block of the counterexample's first grid point is outlined red, those of its " +
           "other points orange; the legend frames its points");
    w_.close();
  }

  void legend() {
    int64_t n = bm_.num_points();
    w_.open("g", {{"class", "legend"}});
    line("colour = grid point, in visiting order (8 colours, then dotted, then cross-hatched); a block lists the grid");
    line("points that touch it; blank: never touched; hatched: padding; red outline: an output block REVISITED (left,");
    line("then touched again); dashed red outline: a block OUT OF BOUNDS (OOB where the words do not fit)");
    y_ += 6;
    double sw = std::min(kMaxW / static_cast<double>(std::max<int64_t>(n, 1)), 28.0);
    double x = kMargin;
    for (int64_t p = 0; p < n; ++p, x += sw) {
      bool marked = std::find(hl_points_.begin(), hl_points_.end(), p) != hl_points_.end();
      SvgAttrs a = {{"class", marked ? "swatch highlight" : "swatch"}, {"x", num(x)}, {"y", num(y_)}, {"width", num(sw)},
                    {"height", "14"}, {"fill", fill(p)}, {"stroke", marked ? "#c00000" : "none"},
                    {"stroke-width", marked ? "3" : "0"}, {"data-point", label(bm_.point(p))}};
      w_.open("rect", a);
      w_.element("title", {}, "grid point " + label(bm_.point(p)) + ", visited " + std::to_string(p + 1) + " of " + std::to_string(n));
      w_.close();
    }
    width_ = std::max(width_, x);
    y_ += 14;
    std::string ends = "first " + label(bm_.point(0));
    if (n > 1) ends += " ... last " + label(bm_.point(n - 1));
    line(ends);
    w_.close();
  }

  void operand(const OperandBlocks& ob) {
    w_.open("g", {{"class", "operand"}, {"data-subject", ob.subject}, {"data-name", ob.name}});
    y_ += 12;
    std::string head = ob.subject + " %" + ob.name + ": " + ob.array.str();
    if (ob.whole) {
      line(head + " in memory any: the kernel gets the whole array (its DMAs are not drawn)", {{"font-weight", "bold"}});
      w_.close();
      return;
    }
    std::vector<std::string> blk;
    for (const DimGeometry& d : ob.geo.dims) {
      switch (d.dim.kind) {
        case BlockDimKind::Blocked: blk.push_back(std::to_string(d.dim.size)); break;
        case BlockDimKind::Squeezed: blk.push_back("squeezed"); break;
        case BlockDimKind::Element: blk.push_back("element(" + std::to_string(d.dim.size) + ")"); break;
        case BlockDimKind::BoundedSlice: blk.push_back("bounded(" + std::to_string(d.dim.size) + ")"); break;
      }
    }
    head += " in blocks (" + join(blk, ", ") + ")";
    head += ob.index_map.empty() ? ", every block index 0" : " by " + ob.index_map;
    if (ob.geo.is_padded()) head += ", padded to " + tuple(ob.geo.padded_shape());
    head += ": " + std::to_string(ob.blocks.size()) + (ob.blocks.size() == 1 ? " block" : " blocks") + " touched";
    line(head, {{"font-weight", "bold"}});
    for (size_t i = 0; i < ob.failures.size() && i < kMaxFailureLines; ++i)
      line("index map failed at grid point " + label(bm_.point(ob.failures[i].first)) + ": " + ob.failures[i].second,
           {{"class", "failure"}, {"fill", "#c00000"}});
    if (ob.failures.size() > kMaxFailureLines)
      line("... and at " + std::to_string(ob.failures.size() - kMaxFailureLines) + " more grid points", {{"fill", "#c00000"}});

    int rank = static_cast<int>(ob.geo.dims.size());
    int lead = std::max(rank - 2, 0);
    Axis rows, cols;
    if (rank >= 1) cols = Axis{rank - 1, ob.geo.dims[static_cast<size_t>(rank - 1)]};
    if (rank >= 2) rows = Axis{rank - 2, ob.geo.dims[static_cast<size_t>(rank - 2)]};
    // One slice per distinct leading-dim extent (all blocks, for rank <= 2).
    std::map<std::vector<int64_t>, std::vector<int>> slices;
    for (size_t b = 0; b < ob.blocks.size(); ++b) {
      std::vector<int64_t> key;
      for (int d = 0; d < lead; ++d) key.insert(key.end(), {ob.blocks[b].extent[d].start, ob.blocks[b].extent[d].size});
      slices[key].push_back(static_cast<int>(b));
    }
    if (slices.empty()) slices[{}];
    if (lead > 0 && slices.size() > kMaxSlices)
      line("showing " + std::to_string(kMaxSlices) + " of " + std::to_string(slices.size()) + " slices of the leading dims");
    y_ += 6;
    double x = kMargin, row_h = 0;
    size_t shown = 0;
    for (const auto& [key, blocks] : slices) {
      if (shown++ == kMaxSlices) break;
      std::string title;
      if (lead > 0) {
        std::vector<std::string> parts;
        for (int d = 0; d < lead; ++d) {
          int64_t s = key[2 * d] - ob.geo.dims[d].pad_lo, n = key[2 * d + 1];
          parts.push_back(ob.geo.dims[d].dim.kind == BlockDimKind::Squeezed ? std::to_string(s)
                                                                             : std::to_string(s) + ":" + std::to_string(s + n));
        }
        title = ob.name + "[" + join(parts, ", ") + ", :, :]";
      }
      // Slices run left to right, a new row once past kMaxW.
      auto [w, h] = slice(ob, blocks, rows, cols, x, y_, title);
      x += w + 24;
      row_h = std::max(row_h, h);
      if (x > kMaxW) {
        y_ += row_h + 12;
        x = kMargin;
        row_h = 0;
      }
    }
    y_ += row_h;
    std::string axes = rows.dim >= 0 ? "rows: " + rows.describe() + ", columns: " + cols.describe()
                                     : cols.dim >= 0 ? "columns: " + cols.describe() : "a scalar";
    line(axes, {{"fill", "#555555"}});
    w_.close();
  }

  // Draws one slice with its top-left corner at (x0, y0); returns its size.
  std::pair<double, double> slice(const OperandBlocks& ob, const std::vector<int>& blocks, const Axis& rows,
                                  const Axis& cols, double x0, double y0, const std::string& title) {
    w_.open("g", {{"class", "slice"}});
    if (!title.empty()) {
      text(x0, y0 + 12, title, {{"class", "slice-title"}});
      y0 += 18;
    }
    int64_t lo_x = 0, hi_x = std::max<int64_t>(cols.geo.padded, 1), lo_y = 0, hi_y = std::max<int64_t>(rows.geo.padded, 1);
    for (int b : blocks) {
      Extent ex = cols.of(ob.blocks[b]), ey = rows.of(ob.blocks[b]);
      lo_x = std::min(lo_x, ex.start), hi_x = std::max(hi_x, ex.start + ex.size);
      lo_y = std::min(lo_y, ey.start), hi_y = std::max(hi_y, ey.start + ey.size);
    }
    double span_x = static_cast<double>(hi_x - lo_x), span_y = static_cast<double>(hi_y - lo_y);
    double sx = kCellW / static_cast<double>(std::max<int64_t>(cols.geo.window(), 1));
    double sy = kCellH / static_cast<double>(std::max<int64_t>(rows.geo.window(), 1));
    sx = std::min(sx, kMaxW / span_x), sy = std::min(sy, kMaxH / span_y);
    Scale s{x0, y0, sx, sy, lo_x, lo_y};

    // Blank tiles: the places blocks could be (one background where they
    // would be too many or too small to see).
    int64_t tx = cols.tile(), ty = rows.tile();
    int64_t px = std::max<int64_t>(cols.geo.padded, 1), py = std::max<int64_t>(rows.geo.padded, 1);
    int64_t ntiles = ((px + tx - 1) / tx) * ((py + ty - 1) / ty);
    SvgAttrs blank = {{"fill", "#ffffff"}, {"stroke", "#bbbbbb"}, {"stroke-width", "0.5"}};
    if (ntiles <= kMaxTiles && static_cast<double>(tx) * sx >= kMinTilePx && static_cast<double>(ty) * sy >= kMinTilePx) {
      blank.push_back({"class", "tile"});
      for (int64_t r = 0; r < py; r += ty)
        for (int64_t c = 0; c < px; c += tx)
          rect(s.x(c), s.y(r), static_cast<double>(std::min(tx, px - c)) * sx, static_cast<double>(std::min(ty, py - r)) * sy, blank);
    } else {
      blank.push_back({"class", "background"});
      rect(s.x(0), s.y(0), static_cast<double>(px) * sx, static_cast<double>(py) * sy, blank);
    }

    for (int b : blocks) block(ob, ob.blocks[b], s, rows, cols);
    padding(s, rows, cols);
    // The array's own extent.
    rect(s.x(cols.geo.pad_lo), s.y(rows.geo.pad_lo), static_cast<double>(std::max<int64_t>(cols.geo.extent, cols.dim < 0)) * sx,
         static_cast<double>(std::max<int64_t>(rows.geo.extent, rows.dim < 0)) * sy,
         {{"class", "array"}, {"fill", "none"}, {"stroke", "#000000"}, {"stroke-width", "1.5"}});
    highlights(ob, blocks, s, rows, cols);
    w_.close();
    double w = span_x * sx, h = span_y * sy + (title.empty() ? 0 : 18);
    width_ = std::max(width_, x0 + w);
    return {w, h};
  }

  void rect(double x, double y, double w, double h, SvgAttrs extra) {
    SvgAttrs a = {{"x", num(x)}, {"y", num(y)}, {"width", num(w)}, {"height", num(h)}};
    a.insert(a.end(), extra.begin(), extra.end());
    w_.element("rect", a);
  }

  void block(const OperandBlocks& ob, const MappedBlock& b, const Scale& s, const Axis& rows, const Axis& cols) {
    Extent ex = cols.of(b), ey = rows.of(b);
    // Blocks too thin to see (a row of a tall array) keep a visible size.
    double x = s.x(ex.start), y = s.y(ey.start);
    double w = std::max(static_cast<double>(ex.size) * s.sx, kMinBlockPx), h = std::max(static_cast<double>(ey.size) * s.sy, kMinBlockPx);
    bool revisit = ob.is_output && b.runs > 1;
    // Stripes: the colours of (up to kMaxStripes of) the grid points touching it.
    size_t k = std::min<size_t>(b.points.size(), kMaxStripes);
    for (size_t i = 0; i < k; ++i)
      rect(x + w * static_cast<double>(i) / static_cast<double>(k), y, w / static_cast<double>(k), h,
           {{"class", "stripe"}, {"fill", fill(b.points[i * b.points.size() / k])}});
    std::string cls = "block";
    if (revisit) cls += " revisit";
    if (b.partial) cls += " partial";
    if (!b.in_bounds) cls += " oob";
    std::vector<std::string> labels;
    for (int64_t p : b.points) labels.push_back(label(bm_.point(p)));
    bool red = revisit || !b.in_bounds;
    SvgAttrs a = {{"class", cls},
                  {"x", num(x)},
                  {"y", num(y)},
                  {"width", num(w)},
                  {"height", num(h)},
                  {"fill", "none"},
                  {"stroke", red ? "#c00000" : "#222222"},
                  {"stroke-width", red ? "3" : "1"},
                  {"data-index", tuple(b.index)},
                  {"data-points", join(labels, " ")}};
    if (!b.in_bounds) a.push_back({"stroke-dasharray", "6 3"});
    w_.open("rect", a);
    std::string tip = ob.subject + " block " + tuple(b.index) + (b.in_bounds ? "" : " (out of bounds)") + ", touched by " +
                      join(labels, " ");
    w_.element("title", {}, tip);
    w_.close();
    block_labels(b, revisit, x, y, w, h, labels);
  }

  // A block's labels: its flags first, always (abbreviated, or on a line a
  // word, where the block is narrow), then the grid points that fit.
  void block_labels(const MappedBlock& b, bool revisit, double x, double y, double w, double h,
                    const std::vector<std::string>& points) {
    size_t room = h > 4 ? static_cast<size_t>((h - 4) / kLabelLine) : 0;
    size_t chars = w > 4 ? static_cast<size_t>((w - 4) / kLabelCharW) : 0;
    std::vector<std::string> lines;
    auto flag = [&](const std::string& whole, const std::string& abbreviation) {
      std::vector<std::string> f = flag_lines(whole, abbreviation, chars);
      if (lines.size() + f.size() > room) f = {abbreviation};
      lines.insert(lines.end(), f.begin(), f.end());
    };
    if (revisit) flag("REVISITED", "REV");
    if (!b.in_bounds) flag("OUT OF BOUNDS", "OOB");
    size_t flags = lines.size();
    if (flags > 0 && (lines.size() > room || lines.back().size() > chars)) {
      // Too small even for the abbreviations: they go just above the block.
      label_text(x + w / 2, y - 3, join(lines, " "), true);
      return;
    }
    for (size_t i = 0; i < points.size() && lines.size() < room; ++i) {
      if (lines.size() + 1 == room && i + 1 < points.size()) {
        std::string more = i == 0 ? std::to_string(points.size()) + " points"
                                  : "+" + std::to_string(points.size() - i) + " more";
        if (more.size() <= chars) lines.push_back(more);
        break;
      }
      if (points[i].size() > chars) break;
      lines.push_back(points[i]);
    }
    double ty = y + (h - kLabelLine * static_cast<double>(lines.size())) / 2 + 10;
    for (size_t i = 0; i < lines.size(); ++i) label_text(x + w / 2, ty + kLabelLine * static_cast<double>(i), lines[i], i < flags);
  }

  void label_text(double x, double y, const std::string& s, bool is_flag) {
    w_.element("text",
               {{"class", is_flag ? "label flag" : "label"},
                {"x", num(x)},
                {"y", num(y)},
                {"font-size", "11"},
                {"text-anchor", "middle"},
                {"fill", is_flag ? "#c00000" : "#000000"},
                // A white halo keeps the text legible over dots and hatching.
                {"stroke", "#ffffff"},
                {"stroke-width", "2.5"},
                {"stroke-linejoin", "round"},
                {"paint-order", "stroke"}},
               s);
  }

  // Hatches the padding around the data: [0, pad_lo) and [pad_lo + extent, padded) per drawn dim.
  void padding(const Scale& s, const Axis& rows, const Axis& cols) {
    auto bands = [](const Axis& a) {
      std::vector<std::pair<int64_t, int64_t>> v;
      if (a.dim < 0) return v;
      if (a.geo.pad_lo > 0) v.push_back({0, a.geo.pad_lo});
      if (a.geo.pad_lo + a.geo.extent < a.geo.padded) v.push_back({a.geo.pad_lo + a.geo.extent, a.geo.padded});
      return v;
    };
    SvgAttrs style = {{"class", "padding"}, {"fill", "url(#padding-hatch)"}, {"stroke", "none"}};
    int64_t px = std::max<int64_t>(cols.geo.padded, 1), py = std::max<int64_t>(rows.geo.padded, 1);
    for (auto [a, b] : bands(cols))
      rect(s.x(a), s.y(0), static_cast<double>(b - a) * s.sx, static_cast<double>(py) * s.sy, style);
    for (auto [a, b] : bands(rows))
      rect(s.x(0), s.y(a), static_cast<double>(px) * s.sx, static_cast<double>(b - a) * s.sy, style);
  }

  // The counterexample: its first point's block in red, the others' in orange.
  void highlights(const OperandBlocks& ob, const std::vector<int>& blocks, const Scale& s, const Axis& rows,
                  const Axis& cols) {
    if (!hl_ || hl_->subject != ob.subject) return;
    std::set<int> done;
    for (size_t i = 0; i < hl_points_.size(); ++i) {
      int64_t p = hl_points_[i];
      if (ob.block_of_point.empty()) return;
      int b = ob.block_of_point[static_cast<size_t>(p)];
      if (b < 0 || !done.insert(b).second) continue;
      if (std::find(blocks.begin(), blocks.end(), b) == blocks.end()) continue;
      const MappedBlock& mb = ob.blocks[static_cast<size_t>(b)];
      Extent ex = cols.of(mb), ey = rows.of(mb);
      rect(s.x(ex.start) - 3, s.y(ey.start) - 3, static_cast<double>(ex.size) * s.sx + 6, static_cast<double>(ey.size) * s.sy + 6,
           {{"class", i == 0 ? "highlight" : "highlight other"},
            {"fill", "none"},
            {"stroke", i == 0 ? "#e00000" : "#ff8c00"},
            {"stroke-width", "4"},
            {"data-point", label(bm_.point(p))},
            {"data-index", tuple(mb.index)}});
    }
  }

  const BlockMap& bm_;
  const BlockMapHighlight* hl_;
  std::vector<int64_t> hl_points_;  // grid point numbers, in the counterexample's order
  SvgWriter w_;
  double y_ = kMargin, width_ = 0;
};

}  // namespace

std::string block_map_svg(const interp::BlockMap& bm, const BlockMapHighlight* highlight) {
  return Drawer(bm, highlight).draw();
}

}  // namespace tessera::cli
