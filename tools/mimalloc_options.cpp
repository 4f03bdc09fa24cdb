// Compiled into every executable that links mimalloc (see the root
// meson.build): asks it for 2 MiB pages (transparent huge pages) before main
// runs. A pass over a 1M-op body touches hundreds of MB of fresh memory; with
// 4 KiB pages, faulting them in was a quarter of jvp's time on the development
// VM, and 2 MiB pages made jvp and vmap on such a body 2-3x faster.
//
// It also makes running out of memory end with a message. mimalloc's `new`
// does not throw std::bad_alloc when memory runs out: it calls abort(), with
// nothing printed unless asked. So its error callback notes an out-of-memory
// error, and a SIGABRT handler turns the abort that follows into
// "error: out of memory" and exit status 1. (The interpreter allocates its
// arrays with the nothrow `new` and reports a failure at the op instead.)
#include <mimalloc.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <unistd.h>

namespace {

std::atomic<bool> out_of_memory{false};

void on_mimalloc_error(int err, void*) {
  if (err == ENOMEM || err == EOVERFLOW) out_of_memory = true;  // the others are reports mimalloc recovers from
}

void on_abort(int) {
  if (!out_of_memory) return;  // abort() then ends the process as it would have
  static const char msg[] = "error: out of memory\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
  _exit(1);
}

const bool configured = [] {
  mi_option_enable(mi_option_large_os_pages);
  mi_register_error(on_mimalloc_error, nullptr);
  std::signal(SIGABRT, on_abort);
  return true;
}();
}  // namespace
