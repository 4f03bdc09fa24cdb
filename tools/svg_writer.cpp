#include "tools/svg_writer.h"

#include <cmath>
#include <cstdio>

namespace tessera::cli {

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string start_tag(std::string_view tag, const SvgAttrs& attrs) {
  std::string s = "<" + std::string(tag);
  for (const auto& [k, v] : attrs) s += " " + k + "=\"" + xml_escape(v) + "\"";
  return s;
}

}  // namespace

void SvgWriter::element(std::string_view tag, const SvgAttrs& attrs, std::string_view text) {
  body_ += std::string(open_.size() * 2, ' ') + start_tag(tag, attrs);
  body_ += text.empty() ? "/>\n" : ">" + xml_escape(text) + "</" + std::string(tag) + ">\n";
}

void SvgWriter::open(std::string_view tag, const SvgAttrs& attrs) {
  body_ += std::string(open_.size() * 2, ' ') + start_tag(tag, attrs) + ">\n";
  open_.emplace_back(tag);
}

void SvgWriter::close() {
  if (open_.empty()) return;
  body_ += std::string((open_.size() - 1) * 2, ' ') + "</" + open_.back() + ">\n";
  open_.pop_back();
}

std::string SvgWriter::document(double width, double height) {
  while (!open_.empty()) close();
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" font-family=\"DejaVu Sans Mono, monospace\" font-size=\"12\">\n" + body_ + "</svg>\n";
}

}  // namespace tessera::cli
