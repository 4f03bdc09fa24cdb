#include "interpreter/option_words.h"

#include <map>

namespace tessera::interp {
namespace {

template <class E>
E choose(const std::string& word, const std::string& what, const std::map<std::string, E>& choices) {
  auto it = choices.find(word);
  if (it != choices.end()) return it->second;
  std::string all;
  for (const auto& [k, _] : choices) all += (all.empty() ? "" : "|") + k;
  throw Error(what + " must be one of " + all + ", got '" + word + "'");
}

}  // namespace

void set_option_word(RunOptions& opts, const std::string& name, const std::string& word, const std::string& what) {
  using O = RunOptions;
  if (name == "dma")
    opts.dma = choose<O::Dma>(word, what, {{"eager", O::Dma::eager}, {"on_wait", O::Dma::on_wait}});
  else if (name == "oob")
    opts.oob = choose<O::Oob>(word, what, {{"raise", O::Oob::raise}, {"uninitialized", O::Oob::uninitialized}});
  else if (name == "uninit")
    opts.uninit = choose<O::Uninit>(word, what, {{"nan", O::Uninit::nan}, {"zero", O::Uninit::zero}});
  else
    throw Error("no run option '" + name + "' is chosen by a word (dma, oob, uninit)");
}

}  // namespace tessera::interp
