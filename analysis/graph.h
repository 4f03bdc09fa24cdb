// Def-use and effect-order graphs of a body (Boost.Graph), and Graphviz export.
#pragma once
