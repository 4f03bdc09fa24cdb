#include "transforms/pass.h"

namespace tessera {

Module dce_pass(const Module&, const PassOptions&) { throw Error("the dce pass is not implemented yet (issue 4)"); }

}  // namespace tessera
