// The tuning file: a context's measured choices, saved and loaded.
//
//   libconv-tuning 2
//   library 0.1.0
//   device cpu AMD Ryzen ...
//   entries 2
//   <problem key>\t<algorithm name>
//   ...
//   checksum <16 hex digits: FNV-1a 64 of every byte before this line>
//   end
//
// The entry count and the closing line catch truncation, the checksum any
// other corruption; the library and device lines stop choices measured
// elsewhere from being misapplied. (Format 1 had no checksum line.)
#pragma once

#include <string>

#include "core/context.h"

namespace conv::dispatch {

// "cpu <model name>": what a CPU context's choices were measured on.
std::string device_signature(const Context &ctx);

void save_tuning(const Context &ctx, const TuningTable &table, const std::string &path);

// Parses and validates the whole file before anything is merged.
void load_tuning(const Context &ctx, TuningTable &table, const std::string &path);

}  // namespace conv::dispatch
