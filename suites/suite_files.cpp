// Suite files: reading one, and the built-in suites (suites/*.toml).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/check.h"
#include "suites/suite_config.h"

#ifndef TRAINSCOPE_SUITES_SOURCE_DIR
#define TRAINSCOPE_SUITES_SOURCE_DIR "suites"
#endif

namespace trainscope::suites {

Suite load_suite_file(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw Error(fmt::format("suite file {} does not exist", path.string()));
  }
  Suite s =
      parse_suite(read_file(path), path.string(), std::filesystem::absolute(path).parent_path());
  s.file = path;
  return s;
}

std::filesystem::path builtin_suites_dir() {
  if (const char* dir = std::getenv("TRAINSCOPE_SUITES_DIR"); dir && *dir) return dir;
  return TRAINSCOPE_SUITES_SOURCE_DIR;
}

std::vector<std::string> builtin_suite_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(builtin_suites_dir(), ec)) {
    if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Suite resolve_suite(const std::string& name_or_path) {
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".toml");
  if (looks_like_path) return load_suite_file(name_or_path);
  const std::filesystem::path p = builtin_suites_dir() / (name_or_path + ".toml");
  if (!std::filesystem::is_regular_file(p)) {
    const auto names = builtin_suite_names();
    throw Error(fmt::format(
        "unknown suite '{}': built-in suites are {} (in {}); or give a path "
        "to a .toml file",
        name_or_path, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")),
        builtin_suites_dir().string()));
  }
  return load_suite_file(p);
}

}  // namespace trainscope::suites
