// A minimal SVG writer: elements with escaped attributes and text, nested
// groups, and the document wrapped around them once its size is known.
// Enough for the block maps of `tessera graph --blocks`; no library needed.
//
//   SvgWriter w;
//   w.open("g", {{"class", "panel"}});
//   w.element("rect", {{"x", num(4)}, {"y", num(4)}, {"width", num(20)}, {"height", num(10)}});
//   w.element("text", {{"x", num(4)}, {"y", num(30)}}, "a < b");
//   w.close();
//   std::string svg = w.document(width, height);
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::cli {

using SvgAttrs = std::vector<std::pair<std::string, std::string>>;

// A coordinate or length: at most two decimals, no trailing zeros.
std::string num(double v);
// `&`, `<`, `>`, `"` and `'` as XML entities.
std::string xml_escape(std::string_view text);

class SvgWriter {
 public:
  // A leaf element; `text` (escaped) becomes its content.
  void element(std::string_view tag, const SvgAttrs& attrs, std::string_view text = "");
  // An element whose children follow until close().
  void open(std::string_view tag, const SvgAttrs& attrs = {});
  void close();
  // Raw markup (for <defs> written by hand).
  void raw(std::string_view markup) { body_ += markup; }
  // The whole document, every open element closed.
  std::string document(double width, double height);

 private:
  std::string body_;
  std::vector<std::string> open_;
};

}  // namespace tessera::cli
