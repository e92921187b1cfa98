#include "suites/suite_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "comm/grad_sync.h"
#include "base/atomic_file.h"
#include "base/check.h"
#include "results/allreduce_algorithms.h"
#include "results/link_profiles.h"
#include "options/data_options.h"
#include "options/placement.h"
#include "training/model_config.h"
#include "training/precision.h"
#include "options/train_option_table.h"
#include "suites/case_skips.h"

namespace trainscope::suites {
namespace {

// mpirun's --bind-to values.
const std::vector<std::string> kBindTo = {"none",    "hwthread", "core", "l1cache", "l2cache",
                                          "l3cache", "socket",   "numa", "board"};
const std::vector<std::string> kAllReduce(results::kAllReduceAlgorithms.begin(),
                                          results::kAllReduceAlgorithms.end());
// Far more cases than a suite could ever run; the grid is checked against it
// before expanding, since a few hundred bytes of axes can name millions.
constexpr double kMaxGridCombinations = 10000;

// The keys that set up LoRA adapters (every setting named lora_*): they go
// with fine_tune = "lora".
bool sets_up_lora(std::string_view key) { return key.starts_with("lora_"); }

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Every suite key in the order a grid expands its axes (the order they had
// before the option table); option-table keys not listed here come after.
// clang-format off
constexpr std::array<std::string_view, 42> kKeyOrder = {
    "model", "mode", "ranks", "reduce", "bucket_mb", "threads", "transport", "links", "allreduce",
    "mpi_algorithm", "zero", "comm_dtype", "fine_tune", "precision", "lora_rank", "lora_alpha",
    "lora_dropout", "lora_layers", "lora_targets", "hosts", "cores_per_host", "cpu_share",
    "link", "tcp_interface", "replay_from", "batch", "batch_per_rank", "data", "tokenizer", "block", "steps",
    "warmup_steps", "eval_every", "shard", "lr", "init_from", "extra_args", "min_bytes",
    "max_bytes", "factor", "iters", "warmup"};
// clang-format on

// A TOML value as the option table reads values (options/train_option_table.h).
nlohmann::json toml_value(const toml::node& n) {
  if (const auto* v = n.as_integer()) return v->get();
  if (const auto* v = n.as_floating_point()) return v->get();
  if (const auto* v = n.as_string()) return v->get();
  if (const auto* v = n.as_boolean()) return v->get();
  return nlohmann::json::object();  // a table or an array: no row takes one
}

class Parser;

// One key a suite may set on its cases, declared once: whether it may be a
// [grid] axis (axes may also be set in [[case]] tables; every key may be set
// in [base]), which kinds of suite have it, and how it is read.
struct Setting {
  std::string_view key;
  bool axis;
  bool train;
  bool allreduce;
  void (*apply)(const Parser&, SuiteCase&, const toml::node&);
};

// Parses one suite; holds the file name for error positions.
class Parser {
 public:
  Parser(std::string source, std::filesystem::path base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  Suite parse(std::string_view text);

 private:
  static const std::vector<Setting>& settings();
  static const Setting* setting(std::string_view key);
  std::vector<std::string> keys(bool axes_only) const;

  std::string at(const toml::source_region& r) const {
    return fmt::format("{}:{}:{}", source_, r.begin.line, r.begin.column);
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& message) const {
    throw Error(fmt::format("{}: {}", at(n.source()), message));
  }
  void check(const toml::node& n, const std::string& problem) const {
    if (!problem.empty()) fail(n, problem);
  }

  std::string get_string(const toml::node& n, std::string_view key,
                         const std::vector<std::string>* allowed = nullptr) const {
    if (!n.is_string()) fail(n, fmt::format("'{}' must be a string", key));
    std::string v = *n.value<std::string>();
    if (allowed && !contains(*allowed, v)) {
      fail(n,
           fmt::format("unknown {} '{}' (expected one of: {})", key, v, fmt::join(*allowed, ", ")));
    }
    return v;
  }
  // Most integers end up in an int (ranks, threads...): larger ones are
  // errors, not silently truncated.
  int64_t get_int(const toml::node& n, std::string_view key, int64_t min,
                  int64_t max = std::numeric_limits<int>::max()) const {
    if (!n.is_integer()) fail(n, fmt::format("'{}' must be an integer", key));
    int64_t v = *n.value<int64_t>();
    if (v < min) fail(n, fmt::format("'{}' must be at least {}, got {}", key, min, v));
    if (v > max) fail(n, fmt::format("'{}' must be at most {}, got {}", key, max, v));
    return v;
  }
  // What a parser of the trainer's own options makes of n (modes, reductions,
  // shards, LoRA targets are spelled once, where the trainer parses them);
  // its error at n.
  template <typename Parse>
  auto checked(const toml::node& n, Parse&& parse) const -> decltype(parse()) {
    try {
      return parse();
    } catch (const Error& e) {
      fail(n, e.what());
    }
  }
  // The name such a parser accepts.
  template <typename Parse>
  std::string canonical(const toml::node& n, Parse&& parse) const {
    return std::string(checked(n, std::forward<Parse>(parse)));
  }
  double get_number(const toml::node& n, std::string_view key) const {
    if (!n.is_number()) fail(n, fmt::format("'{}' must be a number", key));
    const double v = *n.value<double>();
    if (!std::isfinite(v)) fail(n, fmt::format("'{}' must be a finite number, got {}", key, v));
    return v;
  }

  // Sets one setting (axis or base key) on a case; `key` is already known.
  void apply(SuiteCase& c, const std::string& key, const toml::node& n) const;
  void check_keys(const toml::table& t, const std::vector<std::string>& allowed,
                  std::string_view where) const;
  using GridAxes = std::vector<std::pair<std::string, const toml::array*>>;
  void check_grid_size(const toml::node& grid, const GridAxes& axes) const;
  std::string resolve_model(const toml::node& n, const std::string& v) const;
  std::string resolve_init_from(const toml::node& n) const;
  void read_cpu_share(const toml::node& n, SuiteCase& c) const;
  void apply_placement(SuiteCase& c, const options::PlacementKey& row, const toml::node& n) const;
  void read_header(const toml::table& root, Suite& suite);
  SuiteCase read_base(const toml::table& root) const;
  void expand_grid(const toml::node& grid_node, const SuiteCase& base);
  void read_cases(const toml::node& case_node, const SuiteCase& base);
  void check_case_table(const toml::table& t, const SuiteCase& c) const;
  void check_model_and_init_from(const toml::table& t) const;
  void check_replay_from(const toml::node& n, const SuiteCase& c) const;

  std::string source_;
  std::filesystem::path base_dir_;
  CaseKind kind_ = CaseKind::kTrain;
  std::set<std::string> varying_;  // grid axes with more than one value
  std::vector<SuiteCase> cases_;
  std::set<std::string> names_;
};

// A table: one key a row (the placement keys are options/placement.h's).
// clang-format off
const std::vector<Setting>& Parser::settings() {
  using P = const Parser&;
  using N = const toml::node&;
  static const std::vector<Setting> kSettings = {
      {"replay_from", false, true, false, [](P p, SuiteCase& c, N n) {
         c.replay_from = p.get_string(n, "replay_from");
         if (c.replay_from.empty()) p.fail(n, "'replay_from' must name a case of this suite");
       }},
      {"extra_args", false, true, false, [](P p, SuiteCase& c, N n) {
         const toml::array* a = n.as_array();
         if (!a) p.fail(n, "'extra_args' must be an array of strings");
         c.extra_args.clear();
         for (const toml::node& e : *a) c.extra_args.push_back(p.get_string(e, "extra_args[]"));
         c.extra_args_at = p.at(n.source());
       }},
      {"min_bytes", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.min_bytes = p.get_int(n, "min_bytes", 4, std::numeric_limits<int64_t>::max()); }},
      {"max_bytes", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.max_bytes = p.get_int(n, "max_bytes", 4, std::numeric_limits<int64_t>::max()); }},
      {"factor", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.factor = static_cast<int>(p.get_int(n, "factor", 2)); }},
      {"iters", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.iters = static_cast<int>(p.get_int(n, "iters", 1)); }},
      {"warmup", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.warmup = static_cast<int>(p.get_int(n, "warmup", 0)); }},
  };
  return kSettings;
}

// clang-format on

const Setting* Parser::setting(std::string_view key) {
  for (const Setting& s : settings()) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

// The keys this kind of suite has, in kKeyOrder (the grid expands its axes
// in this order, so case order does not depend on the file's), then the
// option table's suite keys kKeyOrder does not list. A sweep has the
// option table's allreduce only.
std::vector<std::string> Parser::keys(bool axes_only) const {
  std::vector<std::string> order(kKeyOrder.begin(), kKeyOrder.end());
  for (const options::PlacementKey& row : options::placement_table()) {
    if (!contains(order, row.key)) order.emplace_back(row.key);
  }
  for (const options::TrainOption& row : options::train_option_table()) {
    if (!row.suite.empty() && !contains(order, row.suite)) order.emplace_back(row.suite);
  }
  std::vector<std::string> out;
  for (const std::string& key : order) {
    bool has = false, axis = false;
    if (const Setting* s = setting(key)) {
      has = kind_ == CaseKind::kTrain ? s->train : s->allreduce;
      axis = s->axis;
    } else if (const options::PlacementKey* row = options::find_placement_key(key)) {
      has = kind_ == CaseKind::kTrain || row->in_sweeps;
      axis = row->axis;
    } else if (const options::TrainOption* row = options::find_suite_option(key)) {
      has = kind_ == CaseKind::kTrain || key == "allreduce";
      axis = row->axis;
    }
    if (has && (axis || !axes_only)) out.push_back(key);
  }
  return out;
}

void Parser::apply(SuiteCase& c, const std::string& key, const toml::node& n) const {
  if (const Setting* s = setting(key)) return s->apply(*this, c, n);
  if (const options::PlacementKey* row = options::find_placement_key(key)) {
    return apply_placement(c, *row, n);
  }
  const options::TrainOption* row = options::find_suite_option(key);
  if (!row) fail(n, fmt::format("unknown key '{}'", key));
  if (key == "model") {
    // A model replaces an init_from of [base] (and init_from a model): the
    // more specific table wins.
    c.train.model = resolve_model(n, get_string(n, "model"));
    c.train.init_from.clear();
    c.given.erase("init_from");
  } else if (key == "init_from") {
    c.train.init_from = resolve_init_from(n);
    c.train.model = c.train.init_from;
  } else {
    if (key == "batch" && c.batch_per_rank > 0) {
      fail(n,
           "'batch' (the global batch) does not go with 'batch_per_rank' (the global batch is "
           "batch_per_rank x ranks): give one");
    }
    checked(n, [&] {
      options::set_option_json(*row, c.train, toml_value(n), key);
      return 0;
    });
  }
  c.given.insert(key);
}

// A placement key's value: within its row's range or choices, or read by
// the reader of a key that needs more.
void Parser::apply_placement(SuiteCase& c, const options::PlacementKey& row,
                             const toml::node& n) const {
  const std::string_view key = row.key;
  if (key == "cpu_share") return read_cpu_share(n, c);

  if (key == "batch_per_rank" && c.train.batch > 0) {
    fail(n,
         "'batch_per_rank' (the global batch is batch_per_rank x ranks) does not go with 'batch' "
         "(the global batch): give one");
  }
  std::visit(
      [&](auto field) {
        using T = std::decay_t<decltype(c.*field)>;
        if constexpr (std::is_enum_v<T>) {
          const auto names = enum_names<T>();
          const std::vector<std::string> choices(names.begin(), names.end());
          c.*field = *parse_enum<T>(get_string(n, key, &choices));
        } else if constexpr (std::is_same_v<T, std::string>) {
          const std::vector<std::string> choices(row.choices.begin(), row.choices.end());
          c.*field = get_string(n, key, choices.empty() ? nullptr : &choices);
          if ((c.*field).empty()) {
            fail(n, key == "tcp_interface" ? "'tcp_interface' must name an interface, e.g. lo"
                                           : fmt::format("'{}' must not be empty", key));
          }
          if (key == "link") check(n, results::link_problem(c.*field));
        } else if constexpr (std::is_same_v<T, int>) {
          c.*field = static_cast<int>(get_int(n, key, row.min, row.max));
          if (key == "mpi_algorithm") check(n, results::open_mpi_algorithm_problem(c.*field));
        } else {
          c.*field = get_number(n, key);
        }
      },
      row.field);
}

// A CPU share in (0, 1], or "C/hosts": C cores shared by however many hosts
// the case has (min(1, C / hosts), resolved by collapse()).
void Parser::read_cpu_share(const toml::node& n, SuiteCase& c) const {
  static const std::regex kPerHosts("([1-9][0-9]{0,4})/hosts");
  std::smatch m;
  const std::string text = n.is_string() ? *n.value<std::string>() : "";
  if (n.is_string() && std::regex_match(text, m, kPerHosts)) {
    c.cpu_share_cores = std::stoi(m[1]);
    return;
  }
  if (!n.is_number()) {
    fail(n,
         "'cpu_share' must be a number in (0, 1] (each host's share of a core) or \"C/hosts\" "
         "(C cores shared by the hosts)");
  }
  const double v = get_number(n, "cpu_share");
  if (!(v >= 0.01 && v <= 1)) fail(n, fmt::format("'cpu_share' must be within 0.01..1, got {}", v));
  c.cpu_share = v;
  c.cpu_share_cores = 0;
}

std::string Parser::resolve_model(const toml::node& n, const std::string& v) const {
  const bool is_path = v.find('/') != std::string::npos || v.ends_with(".json");
  if (!is_path) return v;
  std::filesystem::path p(v);
  if (p.is_relative()) p = base_dir_ / p;
  if (!std::filesystem::is_regular_file(p)) {
    fail(n, fmt::format("model config '{}' not found (looked for {})", v, p.string()));
  }
  // Read now: a config the trainer would refuse fails the suite before any case runs.
  canonical(n, [&] { return training::resolve_model(p.string()).name; });
  return std::filesystem::weakly_canonical(p).string();
}

// A Hugging Face checkpoint directory whose config.json the trainer reads.
std::string Parser::resolve_init_from(const toml::node& n) const {
  const std::string v = get_string(n, "init_from");
  if (v.empty()) fail(n, "'init_from' must name a checkpoint directory");
  std::filesystem::path p(v);
  if (p.is_relative()) p = base_dir_ / p;
  if (!std::filesystem::is_directory(p)) {
    fail(n, fmt::format("init_from '{}' is not a directory (looked for {})", v, p.string()));
  }
  // Read now: a checkpoint the trainer would refuse fails the suite before any case runs.
  checked(n, [&] { return training::resolve_model(p.string()); });
  return std::filesystem::weakly_canonical(p).string();
}

void Parser::check_keys(const toml::table& t, const std::vector<std::string>& allowed,
                        std::string_view where) const {
  for (auto&& [k, v] : t) {
    if (!contains(allowed, k.str())) {
      throw Error(fmt::format("{}: unknown key '{}' in {} (allowed: {})", at(k.source()), k.str(),
                              where, fmt::join(allowed, ", ")));
    }
  }
}

void Parser::check_grid_size(const toml::node& grid, const GridAxes& axes) const {
  double combinations = 1;  // a double: the product of a hostile file's axes overflows int64
  std::vector<std::string> sizes;
  for (const auto& [axis, values] : axes) {
    combinations *= static_cast<double>(values->size());
    sizes.push_back(fmt::format("{} {}", axis, values->size()));
  }
  if (combinations > kMaxGridCombinations) {
    fail(grid, fmt::format("the grid has {:.0f} combinations ({}), more than the {:.0f} a suite "
                           "may have",
                           combinations, fmt::join(sizes, " x "), kMaxGridCombinations));
  }
}

void Parser::read_header(const toml::table& root, Suite& suite) {
  check_keys(root,
             {"name", "description", "kind", "repetitions", "timeout_s", "bind_to", "tcp_interface",
              "base", "grid", "case"},
             "the suite");
  const toml::node* name = root.get("name");
  if (!name) throw Error(fmt::format("{}: missing required key 'name'", source_));
  suite.name = get_string(*name, "name");
  if (suite.name.empty()) fail(*name, "'name' must not be empty");
  if (const toml::node* n = root.get("description"))
    suite.description = get_string(*n, "description");
  if (const toml::node* n = root.get("kind")) {
    static const std::vector<std::string> kKinds = {"train", "allreduce"};
    suite.kind =
        get_string(*n, "kind", &kKinds) == "train" ? CaseKind::kTrain : CaseKind::kAllReduce;
  }
  kind_ = suite.kind;
  if (const toml::node* n = root.get("repetitions"))
    suite.repetitions = static_cast<int>(get_int(*n, "repetitions", 1));
  if (const toml::node* n = root.get("timeout_s")) {
    suite.timeout_s = get_number(*n, "timeout_s");
    if (!(suite.timeout_s > 0)) fail(*n, "'timeout_s' must be positive");
  }
  if (const toml::node* n = root.get("bind_to"))
    suite.bind_to = get_string(*n, "bind_to", &kBindTo);
  if (const toml::node* n = root.get("tcp_interface")) {
    suite.tcp_interface = get_string(*n, "tcp_interface");
    if (suite.tcp_interface.empty()) fail(*n, "'tcp_interface' must name an interface, e.g. lo");
  }
}

SuiteCase Parser::read_base(const toml::table& root) const {
  SuiteCase base;
  base.kind = kind_;
  base.train.model = "seed";
  base.train.steps = 10;
  // A suite's stalled job ends itself, naming the missing rank, rather than
  // waiting out the case's timeout.
  base.train.stall_action = options::StallAction::kAbort;
  base.ranks = 0;  // unless given: one per host
  const toml::node* base_node = root.get("base");
  if (!base_node) return base;
  const toml::table* t = base_node->as_table();
  if (!t) fail(*base_node, "'base' must be a table");
  check_keys(*t, keys(false), "[base]");
  check_model_and_init_from(*t);
  if (const toml::node* r = t->get("replay_from")) {
    fail(*r, "'replay_from' names the case one [[case]] replays: it goes in that [[case]]");
  }
  for (auto&& [k, v] : *t) apply(base, std::string(k.str()), v);
  if (kind_ == CaseKind::kTrain && base.train.steps <= base.train.warmup_steps) {
    const toml::node* s = t->get("steps");
    fail(s ? *s : *base_node,
         fmt::format("steps ({}) must exceed warmup_steps ({}): no step would be measured",
                     base.train.steps, base.train.warmup_steps));
  }
  if (kind_ == CaseKind::kAllReduce && base.sweep.max_bytes < base.sweep.min_bytes) {
    fail(*base_node, "max_bytes must be at least min_bytes");
  }
  return base;
}

void Parser::expand_grid(const toml::node& grid_node, const SuiteCase& base) {
  const toml::table* grid = grid_node.as_table();
  if (!grid) fail(grid_node, "'grid' must be a table");
  check_keys(*grid, keys(true), "[grid]");
  GridAxes dims;
  for (const std::string& axis : keys(true)) {
    const toml::node* n = grid->get(axis);
    if (!n) continue;
    const toml::array* a = n->as_array();
    if (!a) fail(*n, fmt::format("grid axis '{}' must be an array", axis));
    if (a->empty()) fail(*n, fmt::format("grid axis '{}' is empty", axis));
    if (a->size() > 1) varying_.insert(axis);
    dims.emplace_back(axis, a);
  }
  check_grid_size(grid_node, dims);
  std::vector<size_t> index(dims.size(), 0);
  while (true) {
    SuiteCase c = base;
    for (size_t d = 0; d < dims.size(); ++d)
      apply(c, dims[d].first, *dims[d].second->get(index[d]));
    collapse(c);
    c.name = generated_case_name(c, varying_);
    c.skip_reason = skip_reason(c);
    if (names_.insert(c.name).second) cases_.push_back(std::move(c));
    size_t d = 0;
    for (; d < dims.size(); ++d) {
      if (++index[d] < dims[d].second->size()) break;
      index[d] = 0;
    }
    if (d == dims.size()) break;
  }
}

// init_from names the model (its config.json): one table gives one of them.
void Parser::check_model_and_init_from(const toml::table& t) const {
  if (t.get("init_from") && t.get("model")) {
    fail(*t.get("init_from"),
         "'init_from' names the model (its config.json): it does not go with "
         "'model' in the same table");
  }
}

// A replay's source: a training case before it that computes, whose summary
// the runner has by the time the replay runs.
void Parser::check_replay_from(const toml::node& n, const SuiteCase& c) const {
  const auto source = std::find_if(cases_.begin(), cases_.end(),
                                   [&](const SuiteCase& s) { return s.name == c.replay_from; });
  if (source == cases_.end()) {
    fail(n,
         fmt::format("'replay_from' names '{}', which is no case before this one", c.replay_from));
  }
  if (source->kind != CaseKind::kTrain || !source->replay_from.empty()) {
    fail(n, fmt::format("'replay_from' must name a training case that computes; '{}' does not",
                        c.replay_from));
  }
  if (c.train.zero == 1) fail(n, "'replay_from' does not go with zero = 1");
}

// Explicitly written settings that cannot apply are mistakes.
void Parser::check_case_table(const toml::table& t, const SuiteCase& c) const {
  if (t.get("links") && c.transport != options::Transport::kTcp) {
    fail(*t.get("links"), fmt::format("'links' applies to the tcp transport only, this case "
                                      "uses '{}'",
                                      enum_name(c.transport)));
  }
  if (t.get("bucket_mb") && c.train.reduce == options::ReduceStrategy::kPerTensor) {
    fail(*t.get("bucket_mb"), "'bucket_mb' applies to fused and overlap(-poll), not per-tensor");
  }
  if (t.get("link") && c.hosts <= 1) {
    fail(*t.get("link"), "'link' applies between hosts: give this case hosts = 2 or more");
  }
  for (const options::TrainOption& row : options::train_option_table()) {
    const std::string_view key = row.suite;
    if (sets_up_lora(key) && t.get(key) && c.train.fine_tune != options::FineTune::kLora) {
      fail(*t.get(key),
           fmt::format("'{}' sets up LoRA adapters: it goes with fine_tune = \"lora\"; "
                       "this case fine-tunes '{}'",
                       key, enum_name(c.train.fine_tune)));
    }
  }
  if (t.get("mpi_algorithm") && c.train.allreduce != options::AllReduceAlgorithm::kMpi) {
    fail(*t.get("mpi_algorithm"),
         fmt::format("'mpi_algorithm' chooses Open MPI's algorithm for allreduce = \"mpi\"; this "
                     "case uses '{}'",
                     enum_name(c.train.allreduce)));
  }
}

void Parser::read_cases(const toml::node& case_node, const SuiteCase& base) {
  const toml::array* list = case_node.as_array();
  if (!list || !list->is_array_of_tables()) fail(case_node, "'case' must be [[case]] tables");
  std::vector<std::string> case_keys = keys(true);
  case_keys.push_back("name");
  case_keys.push_back("timeout_s");
  // A case's own flags (e.g. --inject-delay), starting weights instead of
  // [base]'s, and the case whose compute it replays.
  if (kind_ == CaseKind::kTrain) {
    case_keys.insert(case_keys.end(), {"extra_args", "init_from", "replay_from"});
  }
  // Settings the cases vary name their value in the generated names.
  for (const toml::node& e : *list) {
    const toml::node* m = e.as_table()->get("model");
    if (m && m->is_string() && *m->value<std::string>() != base.train.model)
      varying_.insert("model");
    const toml::node* f = e.as_table()->get("fine_tune");
    if (f && f->is_string() && *f->value<std::string>() != enum_name(base.train.fine_tune)) {
      varying_.insert("fine_tune");
    }
  }
  for (const toml::node& e : *list) {
    const toml::table& t = *e.as_table();
    check_keys(t, case_keys, "[[case]]");
    check_model_and_init_from(t);
    SuiteCase c = base;
    for (auto&& [k, v] : t) {
      if (k.str() == "timeout_s") {
        c.timeout_s = get_number(v, "timeout_s");
        if (!(*c.timeout_s > 0)) fail(v, "'timeout_s' must be positive");
      } else if (k.str() != "name") {
        apply(c, std::string(k.str()), v);
      }
    }
    check_case_table(t, c);
    if (const toml::node* r = t.get("replay_from")) check_replay_from(*r, c);
    if (c.train.replay_time_scale != 1 && c.replay_from.empty()) {
      const toml::node* k = t.get("replay_time_scale");
      fail(k ? *k : e, "'replay_time_scale' slows a replay (replay_from): this case computes");
    }
    collapse(c);
    const toml::node* name = t.get("name");
    c.name = name ? get_string(*name, "name") : generated_case_name(c, varying_);
    if (c.name.empty()) fail(*name, "case name must not be empty");
    c.skip_reason = skip_reason(c);
    if (!names_.insert(c.name).second) {
      fail(e, fmt::format("duplicate case '{}' (give it a distinct 'name')", c.name));
    }
    cases_.push_back(std::move(c));
  }
}

Suite Parser::parse(std::string_view text) {
  toml::table root;
  try {
    root = toml::parse(text, source_);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}: invalid TOML: {}", at(e.source()), e.description()));
  }
  Suite suite;
  suite.text = std::string(text);
  read_header(root, suite);
  const SuiteCase base = read_base(root);
  const toml::node* grid_node = root.get("grid");
  const toml::node* case_node = root.get("case");
  if (!grid_node && !case_node) {
    throw Error(fmt::format("{}: the suite has neither a [grid] nor [[case]] tables", source_));
  }
  if (grid_node) expand_grid(*grid_node, base);
  if (case_node) read_cases(*case_node, base);
  suite.cases = std::move(cases_);
  return suite;
}

}  // namespace

Suite parse_suite(std::string_view toml_text, const std::string& source_name,
                  const std::filesystem::path& base_dir) {
  return Parser(source_name, base_dir).parse(toml_text);
}

}  // namespace trainscope::suites
