#include "ir/diagnostics.h"

namespace tessera {

std::string Loc::str() const {
  if (!known()) return "<unknown>";
  return *file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

Error::Error(Loc loc, std::string message)
    : std::runtime_error(loc.known() ? loc.str() + ": error: " + message : "error: " + message),
      loc_(std::move(loc)),
      message_(std::move(message)) {}

std::string Error::formatted() const { return what(); }

}  // namespace tessera
