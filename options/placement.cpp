#include "options/placement.h"

#include <fmt/format.h>

#include <array>
#include <type_traits>

namespace trainscope::options {
namespace {

using P = const Placement&;

// A number's name part when it is past its "none" value (0 or 1).
template <int Placement::*field, int none>
std::string number_part(std::string_view prefix, P p) {
  return p.*field > none ? fmt::format("{}{}", prefix, p.*field) : "";
}

}  // namespace

// A table: one key a row, in the order a case's config records them.
// clang-format off
const std::vector<PlacementKey>& placement_table() {
  static const std::vector<PlacementKey> kTable = {
      {.key = "ranks", .field = &Placement::ranks, .min = 1, .always_recorded = true,
       .name_part = [](P p, bool) { return fmt::format("r{}", p.ranks); }},
      {.key = "transport", .field = &Placement::transport, .always_recorded = true,
       .name_part = [](P p, bool) {
         return p.transport != Transport::kAuto ? std::string(enum_name(p.transport)) : "";
       }},
      {.key = "links", .field = &Placement::links, .min = 1, .always_recorded = true,
       .name_part = [](P p, bool) { return number_part<&Placement::links, 0>("l", p); }},
      {.key = "hosts", .field = &Placement::hosts, .min = 1, .max = 250,
       .name_part = [](P p, bool) { return number_part<&Placement::hosts, 1>("h", p); }},
      {.key = "cores_per_host", .field = &Placement::cores_per_host, .min = 1,
       .name_part = [](P p, bool) { return number_part<&Placement::cores_per_host, 0>("c", p); }},
      {.key = "cpu_share", .field = &Placement::cpu_share,
       .name_part = [](P p, bool) {
         return p.cpu_share < 1 ? fmt::format("f{:g}", p.cpu_share) : std::string();
       }},
      {.key = "link", .field = &Placement::link,
       .name_part = [](P p, bool) { return p.link; }},
      {.key = "tcp_interface", .field = &Placement::tcp_interface,
       .name_part = [](P p, bool varying) { return varying ? p.tcp_interface : std::string(); }},
      {.key = "batch_per_rank", .field = &Placement::batch_per_rank, .min = 1, .in_sweeps = false,
       .name_part = [](P p, bool) { return number_part<&Placement::batch_per_rank, 0>("bpr", p); }},
      {.key = "mpi_algorithm", .field = &Placement::mpi_algorithm,
       .name_part = [](P p, bool) { return number_part<&Placement::mpi_algorithm, 0>("alg", p); }},
  };
  return kTable;
}
// clang-format on

const PlacementKey* find_placement_key(std::string_view key) {
  for (const PlacementKey& row : placement_table()) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

bool placement_is_default(const PlacementKey& row, const Placement& p) {
  static const Placement kDefault;
  return std::visit([&](auto field) { return p.*field == kDefault.*field; }, row.field);
}

nlohmann::json placement_json(const PlacementKey& row, const Placement& p) {
  return std::visit(
      [&](auto field) {
        using T = std::decay_t<decltype(p.*field)>;
        if constexpr (std::is_enum_v<T>) {
          return nlohmann::json(enum_name(p.*field));
        } else {
          return nlohmann::json(p.*field);
        }
      },
      row.field);
}

void record_placement(const Placement& p, nlohmann::json& config) {
  for (const PlacementKey& row : placement_table()) {
    if (row.always_recorded || !placement_is_default(row, p)) {
      config[std::string(row.key)] = placement_json(row, p);
    }
  }
}

Placement placement_from_config(const nlohmann::json& config) {
  Placement p;
  if (!config.is_object()) return p;
  for (const PlacementKey& row : placement_table()) {
    const auto it = config.find(std::string(row.key));
    if (it == config.end()) continue;
    std::visit(
        [&](auto field) {
          using T = std::decay_t<decltype(p.*field)>;
          if constexpr (std::is_enum_v<T>) {
            if (!it->is_string()) return;
            if (auto value = parse_enum<T>(it->template get<std::string>())) p.*field = *value;
          } else if constexpr (std::is_same_v<T, std::string>) {
            if (it->is_string()) p.*field = it->template get<std::string>();
          } else if constexpr (std::is_same_v<T, int>) {
            if (it->is_number_integer()) p.*field = it->template get<int>();
          } else {
            if (it->is_number()) p.*field = it->template get<double>();
          }
        },
        row.field);
  }
  return p;
}

}  // namespace trainscope::options
