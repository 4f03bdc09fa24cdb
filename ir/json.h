// The one JSON string quoter: the prover's --json report and the
// interpreter's --timeline trace both write JSON by hand (no library needed
// for flat records), and must escape strings the same way.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

// `"text"` with quotes, backslashes and control characters escaped.
std::string json_quote(std::string_view text);

}  // namespace tessera
