#include "training/model_size.h"

#include <unistd.h>

#include <fmt/format.h>

#include "base/check.h"
#include "kernels/storage.h"

namespace trainscope::training {

int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

void check_fits_in_memory(std::string_view what, double bytes, std::string_view detail) {
  const int64_t memory = physical_memory_bytes();
  if (memory <= 0 || bytes <= static_cast<double>(memory)) return;
  throw Error(
      fmt::format("{} needs {:.0f} bytes ({}: {}), more than the {} of this machine's "
                  "memory",
                  what, bytes, kernels::format_bytes(bytes), detail,
                  kernels::format_bytes(static_cast<double>(memory))));
}

}  // namespace trainscope::training
