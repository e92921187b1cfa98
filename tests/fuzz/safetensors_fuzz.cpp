// Fuzzes training::load_safetensors against the parameter layout of the
// `tiny` preset: the 8-byte header length, the JSON header (through the JSON
// reader) and its checks of every tensor's dtype, shape and data_offsets.
//
// Input: the start of the file (length + header, optionally some data). The
// target appends the data section of a valid tiny checkpoint (zeros), so that
// mutations spend their time on the header rather than on 150 KB of floats.
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "training/param_layout.h"
#include "training/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  static const training::ParamLayout layout(training::model_preset("tiny"));
  static const std::string data_section(static_cast<std::size_t>(layout.total()) * 4, '\0');
  const std::string path =
      fuzz::ScratchDir::get().write("model.safetensors", {fuzz::as_text(data, size), data_section});
  std::vector<float> arena(static_cast<std::size_t>(layout.total()));
  (void)fuzz::parse_or_reject([&] {
    training::load_safetensors(path, layout, arena);
    return true;
  });
  return 0;
}
