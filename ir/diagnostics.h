// Source locations and the one error type every layer of tessera throws.
//
// Errors are exceptions carrying a location; the CLI catches them and prints
// `file:line:col: error: message`. Nothing in tessera aborts on bad input.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace tessera {

struct Loc {
  std::shared_ptr<const std::string> file;  // shared: one string per source file
  int line = 0;
  int col = 0;

  bool known() const { return file != nullptr && line > 0; }
  std::string str() const;  // "file:line:col" or "<unknown>"
};

class Error : public std::runtime_error {
 public:
  Error(Loc loc, std::string message);
  explicit Error(std::string message) : Error(Loc{}, std::move(message)) {}

  const Loc& loc() const { return loc_; }
  const std::string& message() const { return message_; }
  // "file:line:col: error: message", or "error: message" without a location.
  std::string formatted() const;

 private:
  Loc loc_;
  std::string message_;
};

}  // namespace tessera
