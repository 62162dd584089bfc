// The AdamW element step on the device: base/adam_math.h's formula (the files that use it build with
// --fmad=false, so the GPU computes the same bits as every host path from the same inputs).
#pragma once

#include "base/adam_math.h"
