// Compiled into every executable that links mimalloc (see the root
// meson.build): asks it for 2 MiB pages (transparent huge pages) before main
// runs. A pass over a 1M-op body touches hundreds of MB of fresh memory; with
// 4 KiB pages, faulting them in was a quarter of jvp's time on the development
// VM, and 2 MiB pages made jvp and vmap on such a body 2-3x faster.
//
// It also registers an error handler: mimalloc's operator new calls abort(),
// silently, when an allocation fails (it cannot see the C++ new-handler from
// its C code). The handler says so and exits with status 1 instead; throwing
// std::bad_alloc through mimalloc's C frames is not possible. (Without
// mimalloc, std::bad_alloc reaches tools/tessera.cpp, which prints the same.)
#include <mimalloc.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace {
void on_mimalloc_error(int err, void*) {
  if (err != ENOMEM && err != EOVERFLOW) return;  // the others are reports mimalloc recovers from
  std::fputs("error: out of memory\n", stderr);
  std::_Exit(1);
}

const bool large_pages = [] {
  mi_option_enable(mi_option_large_os_pages);
  mi_register_error(on_mimalloc_error, nullptr);
  return true;
}();
}  // namespace
