// `--assume 'idx in [0, 1024)'`: declared ranges of scalar prefetch values and
// dynamic grid sizes.
#include <cctype>

#include "analysis/prove/prove.h"

namespace tessera::prove {

namespace {

struct Cursor {
  std::string_view s;
  size_t i = 0;
  void skip() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  bool eat(char c) { skip(); if (i < s.size() && s[i] == c) { ++i; return true; } return false; }
  std::string word() {
    skip();
    size_t b = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '[' || s[i] == ']' || s[i] == '.')) {
      // `grid[0]` is a name, but `[` also opens the range: stop at " in".
      if (s[i] == '[' && (i == b || s[i - 1] == ' ')) break;
      ++i;
    }
    return std::string(s.substr(b, i - b));
  }
  bool integer(int64_t& v) {
    skip();
    size_t b = i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t digits = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == digits) return false;
    try { v = std::stoll(std::string(s.substr(b, i - b))); } catch (...) { return false; }
    return true;
  }
};

}  // namespace

Assumption parse_assumption(std::string_view text) {
  auto bad = [&](const std::string& why) -> Assumption {
    throw Error("cannot parse assumption '" + std::string(text) + "': " + why + " (expected 'NAME in [lo, hi)' or 'NAME in [lo, hi]')");
  };
  Cursor c{text};
  Assumption a;
  a.name = c.word();
  if (a.name.empty()) return bad("missing name");
  if (c.word() != "in") return bad("expected 'in' after the name");
  if (!c.eat('[')) return bad("expected '['");
  if (!c.integer(a.lo)) return bad("expected an integer lower bound");
  if (!c.eat(',')) return bad("expected ','");
  if (!c.integer(a.hi)) return bad("expected an integer upper bound");
  if (c.eat(']')) a.hi += 1;
  else if (!c.eat(')')) return bad("expected ')' or ']'");
  c.skip();
  if (c.i != text.size()) return bad("unexpected text after the range");
  if (a.hi <= a.lo) return bad("the range is empty");
  return a;
}

std::vector<Assumption> assumptions_in_source(std::string_view text) {
  std::vector<Assumption> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t k = line.find_first_not_of(" \t");
    if (k == std::string_view::npos) continue;
    line = line.substr(k);
    std::string_view body;
    for (std::string_view lead : {"#", "//"})
      if (line.substr(0, lead.size()) == lead) body = line.substr(lead.size());
    size_t b = body.find_first_not_of(" \t");
    if (b == std::string_view::npos) continue;
    body = body.substr(b);
    constexpr std::string_view kTag = "prove: assume ";
    if (body.substr(0, kTag.size()) == kTag) out.push_back(parse_assumption(body.substr(kTag.size())));
  }
  return out;
}

}  // namespace tessera::prove
