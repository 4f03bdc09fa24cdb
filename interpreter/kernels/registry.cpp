// Filled in by the array-kernels work.
#include "interpreter/kernels.h"
