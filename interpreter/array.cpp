// Filled in by the array-kernels work.
#include "interpreter/array.h"
