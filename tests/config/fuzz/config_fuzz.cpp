// libFuzzer entry point for the ds_config front-end: any byte string must load without throwing
// or crashing, and end valid or with at least one diagnostic.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/config/config_load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zt::LoadOptions o;
  o.world_size = 1 + (size % 8);
  o.world_source = zt::WorldSizeSource::Flag;
  o.probe_paths = false;  // no file-system probing from the fuzzer
  o.flags.micro_batch = 2;
  o.model_hidden = 64;
  const auto r = zt::load_config_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json", o);
  if (!r.valid() && r.diagnostics.all().empty()) std::abort();
  return 0;
}
