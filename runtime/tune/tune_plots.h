// The tuner's two plots, as SVG files written without a plotting library: tokens/s of every trial,
// grouped by cell, with each cell's largest micro batch that fits and the failed trials marked
// (tokens_per_s.svg); and every ok trial's planned peak against the measured one, with the ±10%
// band (plan_vs_measured.svg).
#pragma once

#include <string>

#include "runtime/tune/tuner.h"

namespace zt {

std::string tokens_per_s_svg(const TuneResult& r);
std::string plan_vs_measured_svg(const TuneResult& r);

}  // namespace zt
