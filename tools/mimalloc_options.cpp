// Compiled into every executable that links mimalloc (see the root
// meson.build): asks it for 2 MiB pages (transparent huge pages) before main
// runs. A pass over a 1M-op body touches hundreds of MB of fresh memory; with
// 4 KiB pages, faulting them in was a quarter of jvp's time on the development
// VM, and 2 MiB pages made jvp and vmap on such a body 2-3x faster.
#include <mimalloc.h>

namespace {
const bool large_pages = [] {
  mi_option_enable(mi_option_large_os_pages);
  return true;
}();
}  // namespace
