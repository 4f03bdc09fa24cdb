// Draws a block map (interpreter/block_map.h) as SVG: `tessera graph --blocks`
// and the counterexamples of `tessera prove --svg` (docs/pictures.md).
//
// One panel per input and output: the array (its last two dims; rank 1 as a
// row; leading dims as one panel per leading block) cut into blocks. A block
// is filled with the colours of the grid points that touch it (8 distinct
// colours, then dotted, then cross-hatched, in visiting order) and lists them;
// blocks nobody touches stay blank, padding is hatched, an output block
// touched again after being left is outlined red and marked REVISITED, a
// block outside the padded array is outlined red and dashed and marked OUT OF
// BOUNDS. A legend gives the grid order and the fills.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interpreter/block_map.h"

namespace tessera::cli {

// A failed claim drawn on the map: the blocks its grid points touch in the
// subject's panel are outlined (the first point's in red), the points are
// marked in the legend, and the caption is printed on top.
struct BlockMapHighlight {
  std::string subject;                       // "out[0]"
  std::vector<std::vector<int64_t>> points;  // the counterexample's grid points
  std::vector<std::string> caption;          // lines
};

std::string block_map_svg(const interp::BlockMap& bm, const BlockMapHighlight* highlight = nullptr);

}  // namespace tessera::cli
