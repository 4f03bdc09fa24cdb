#include "frontends/mosaic/mlir_ast.h"
#include "tests/test_util.h"
TEST_CASE("placeholder") {}
