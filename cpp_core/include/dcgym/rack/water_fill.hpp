// Water-filling, the rack family's fixed rule in Malcolm's action space: the
// rule itself lives in the runtime (runtime/water_fill.hpp), so that the
// engine's `water_fill` heuristic and the policy file's `fill` kind compute
// the same tables.
#pragma once

#include "dcgym/runtime/water_fill.hpp"

namespace dcgym::rack {

using runtime::WaterFillTable;

}  // namespace dcgym::rack
