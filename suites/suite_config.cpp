#include "suites/suite_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "comm/grad_sync.h"
#include "kernels/atomic_file.h"
#include "kernels/check.h"
#include "training/data/data_options.h"
#include "training/model_config.h"

#ifndef TRAINSCOPE_SUITES_SOURCE_DIR
#define TRAINSCOPE_SUITES_SOURCE_DIR "suites"
#endif

namespace trainscope::suites {
namespace {

// mpirun's --bind-to values.
const std::vector<std::string> kBindTo = {"none", "hwthread", "core", "l1cache", "l2cache",
                                          "l3cache", "socket", "numa", "board"};
const std::vector<std::string> kTransports = {"auto", "shm", "tcp"};
const std::vector<std::string> kAxes = {"model",   "mode",      "ranks",    "reduce",
                                        "bucket_mb", "threads", "transport", "links"};
const std::vector<std::string> kTrainBase = {"data",       "tokenizer", "batch", "block",
                                             "steps",      "warmup_steps", "eval_every",
                                             "shard",      "lr",        "extra_args"};
const std::vector<std::string> kSweepBase = {"min_bytes", "max_bytes", "factor", "iters",
                                             "warmup"};
// Far more cases than a suite could ever run; the grid is checked against it
// before expanding, since a few hundred bytes of axes can name millions.
constexpr double kMaxGridCombinations = 10000;

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Parses one suite; holds the file name for error positions.
class Parser {
 public:
  Parser(std::string source, std::filesystem::path base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  Suite parse(std::string_view text);

 private:
  std::string at(const toml::source_region& r) const {
    return fmt::format("{}:{}:{}", source_, r.begin.line, r.begin.column);
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& message) const {
    throw Error(fmt::format("{}: {}", at(n.source()), message));
  }

  std::string get_string(const toml::node& n, std::string_view key,
                         const std::vector<std::string>* allowed = nullptr) const {
    if (!n.is_string()) fail(n, fmt::format("'{}' must be a string", key));
    std::string v = *n.value<std::string>();
    if (allowed && !contains(*allowed, v)) {
      fail(n, fmt::format("unknown {} '{}' (expected one of: {})", key, v,
                          fmt::join(*allowed, ", ")));
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
  // The name a parser of the trainer's own options accepts (modes, reductions,
  // shards are spelled once, where the trainer parses them); its error at n.
  template <typename Parse>
  std::string canonical(const toml::node& n, Parse&& parse) const {
    try {
      return std::string(parse());
    } catch (const Error& e) {
      fail(n, e.what());
    }
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
  std::string case_name(const SuiteCase& c, bool with_model) const;
  void finalize(SuiteCase& c) const;

  std::string source_;
  std::filesystem::path base_dir_;
  CaseKind kind_ = CaseKind::kTrain;
};

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

void Parser::apply(SuiteCase& c, const std::string& key, const toml::node& n) const {
  if (key == "model") {
    c.model = resolve_model(n, get_string(n, key));
  } else if (key == "mode") {
    c.mode = canonical(n, [&] {
      return training::to_string(training::parse_data_mode(get_string(n, key), key));
    });
  } else if (key == "ranks") {
    c.ranks = static_cast<int>(get_int(n, key, 1));
  } else if (key == "reduce") {
    c.reduce = canonical(n, [&] {
      return comm::reduce_strategy_name(comm::parse_reduce_strategy(get_string(n, key), key));
    });
  } else if (key == "bucket_mb") {
    c.bucket_mb = get_number(n, key);
  } else if (key == "threads") {
    c.threads = static_cast<int>(get_int(n, key, 0));
  } else if (key == "transport") {
    c.transport = get_string(n, key, &kTransports);
  } else if (key == "links") {
    c.links = static_cast<int>(get_int(n, key, 1));
  } else if (key == "data") {
    c.data = get_string(n, key);
  } else if (key == "tokenizer") {
    c.tokenizer = get_string(n, key);
  } else if (key == "batch") {
    c.batch = static_cast<int>(get_int(n, key, 1));
  } else if (key == "block") {
    c.block = static_cast<int>(get_int(n, key, 2));
  } else if (key == "steps") {
    c.steps = get_int(n, key, 1);
  } else if (key == "warmup_steps") {
    c.warmup_steps = get_int(n, key, 0);
  } else if (key == "eval_every") {
    c.eval_every = get_int(n, key, 0);
  } else if (key == "shard") {
    c.shard = canonical(n, [&] {
      return training::to_string(training::parse_shard_mode(get_string(n, key), key));
    });
  } else if (key == "lr") {
    c.lr = get_number(n, key);
  } else if (key == "extra_args") {
    const toml::array* a = n.as_array();
    if (!a) fail(n, "'extra_args' must be an array of strings");
    c.extra_args.clear();
    for (const toml::node& e : *a) c.extra_args.push_back(get_string(e, "extra_args[]"));
  } else if (key == "min_bytes") {
    c.sweep.min_bytes = get_int(n, key, 4, std::numeric_limits<int64_t>::max());
  } else if (key == "max_bytes") {
    c.sweep.max_bytes = get_int(n, key, 4, std::numeric_limits<int64_t>::max());
  } else if (key == "factor") {
    c.sweep.factor = static_cast<int>(get_int(n, key, 2));
  } else if (key == "iters") {
    c.sweep.iters = static_cast<int>(get_int(n, key, 1));
  } else if (key == "warmup") {
    c.sweep.warmup = static_cast<int>(get_int(n, key, 0));
  } else {
    fail(n, fmt::format("unknown key '{}'", key));
  }
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

std::string Parser::case_name(const SuiteCase& c, bool with_model) const {
  std::vector<std::string> parts;
  if (with_model) parts.push_back(std::filesystem::path(c.model).stem().string());
  if (c.kind == CaseKind::kAllReduce) {
    parts.push_back("allreduce");
  } else {
    parts.push_back(c.mode);
  }
  parts.push_back(fmt::format("r{}", c.ranks));
  if (c.kind == CaseKind::kTrain) {
    parts.push_back(c.reduce);
    if (c.bucket_mb) {
      parts.push_back(*c.bucket_mb <= 0 ? std::string("whole") : fmt::format("b{}", *c.bucket_mb));
    }
  }
  if (c.threads > 0) parts.push_back(fmt::format("t{}", c.threads));
  if (c.transport != "auto") parts.push_back(c.transport);
  if (c.links > 0) parts.push_back(fmt::format("l{}", c.links));
  return fmt::format("{}", fmt::join(parts, "-"));
}

// Skip reasons for well-formed combinations that cannot run.
void Parser::finalize(SuiteCase& c) const {
  if (c.kind == CaseKind::kTrain) {
    if (c.mode == "naive" && c.ranks > 1) {
      c.skip_reason = fmt::format("naive runs one process; this case has {} ranks", c.ranks);
    } else if (c.batch > 0 && c.batch % c.ranks != 0) {
      c.skip_reason =
          fmt::format("global batch {} is not divisible by {} ranks", c.batch, c.ranks);
    }
  }
  if (c.skip_reason.empty() && c.transport != "auto" && c.ranks == 1) {
    c.skip_reason = fmt::format("one rank sends nothing over the {} transport", c.transport);
  }
  if (c.skip_reason.empty() && c.links > 4) {
    c.skip_reason = fmt::format(
        "btl_tcp_links {} hangs Open MPI 4.1 once a message exceeds the eager limit (at most 4; "
        "docs/SUITES.md, known problems)",
        c.links);
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
  check_keys(root,
             {"name", "description", "kind", "repetitions", "timeout_s", "bind_to",
              "tcp_interface", "base", "grid", "case"},
             "the suite");

  auto need = [&](const char* key) -> const toml::node& {
    const toml::node* n = root.get(key);
    if (!n) throw Error(fmt::format("{}: missing required key '{}'", source_, key));
    return *n;
  };
  suite.name = get_string(need("name"), "name");
  if (suite.name.empty()) fail(need("name"), "'name' must not be empty");
  if (const toml::node* n = root.get("description")) suite.description = get_string(*n, "description");
  if (const toml::node* n = root.get("kind")) {
    static const std::vector<std::string> kKinds = {"train", "allreduce"};
    suite.kind = get_string(*n, "kind", &kKinds) == "train" ? CaseKind::kTrain
                                                            : CaseKind::kAllReduce;
  }
  kind_ = suite.kind;
  if (const toml::node* n = root.get("repetitions"))
    suite.repetitions = static_cast<int>(get_int(*n, "repetitions", 1));
  if (const toml::node* n = root.get("timeout_s")) {
    suite.timeout_s = get_number(*n, "timeout_s");
    if (!(suite.timeout_s > 0)) fail(*n, "'timeout_s' must be positive");
  }
  if (const toml::node* n = root.get("bind_to")) suite.bind_to = get_string(*n, "bind_to", &kBindTo);
  if (const toml::node* n = root.get("tcp_interface")) {
    suite.tcp_interface = get_string(*n, "tcp_interface");
    if (suite.tcp_interface.empty()) fail(*n, "'tcp_interface' must name an interface, e.g. lo");
  }

  std::vector<std::string> base_keys = kAxes;
  const auto& extra = kind_ == CaseKind::kTrain ? kTrainBase : kSweepBase;
  base_keys.insert(base_keys.end(), extra.begin(), extra.end());
  std::vector<std::string> axes = kAxes;
  // allreduce-bench has no compute threads: a threads axis would only repeat jobs.
  if (kind_ == CaseKind::kAllReduce) axes = {"ranks", "transport", "links"};
  if (kind_ == CaseKind::kAllReduce) {
    base_keys = axes;
    base_keys.insert(base_keys.end(), kSweepBase.begin(), kSweepBase.end());
  }

  SuiteCase base;
  base.kind = kind_;
  base.model = "seed";
  const toml::node* base_node = root.get("base");
  if (base_node) {
    const toml::table* t = base_node->as_table();
    if (!t) fail(*base_node, "'base' must be a table");
    check_keys(*t, base_keys, "[base]");
    for (auto&& [k, v] : *t) apply(base, std::string(k.str()), v);
    if (kind_ == CaseKind::kTrain && base.steps <= base.warmup_steps) {
      const toml::node* s = t->get("steps");
      fail(s ? *s : *base_node,
           fmt::format("steps ({}) must exceed warmup_steps ({}): no step would be measured",
                       base.steps, base.warmup_steps));
    }
    if (kind_ == CaseKind::kAllReduce) {
      if (base.sweep.max_bytes < base.sweep.min_bytes)
        fail(*base_node, "max_bytes must be at least min_bytes");
    }
  }

  std::vector<SuiteCase> cases;
  std::set<std::string> names;
  bool model_varies = false;

  const toml::node* grid_node = root.get("grid");
  const toml::node* case_node = root.get("case");
  if (!grid_node && !case_node) {
    throw Error(fmt::format("{}: the suite has neither a [grid] nor [[case]] tables", source_));
  }
  if (grid_node) {
    const toml::table* grid = grid_node->as_table();
    if (!grid) fail(*grid_node, "'grid' must be a table");
    check_keys(*grid, axes, "[grid]");
    // Axes in a fixed order so case order does not depend on the file's.
    GridAxes dims;
    for (const std::string& axis : axes) {
      const toml::node* n = grid->get(axis);
      if (!n) continue;
      const toml::array* a = n->as_array();
      if (!a) fail(*n, fmt::format("grid axis '{}' must be an array", axis));
      if (a->empty()) fail(*n, fmt::format("grid axis '{}' is empty", axis));
      if (axis == "model" && a->size() > 1) model_varies = true;
      dims.emplace_back(axis, a);
    }
    check_grid_size(*grid_node, dims);
    std::vector<size_t> index(dims.size(), 0);
    while (true) {
      SuiteCase c = base;
      for (size_t d = 0; d < dims.size(); ++d) apply(c, dims[d].first, *dims[d].second->get(index[d]));
      // Axes that do not apply collapse rather than multiply the cases.
      if (c.kind == CaseKind::kAllReduce || c.reduce == "per-tensor") c.bucket_mb.reset();
      if (c.transport != "tcp") c.links = 0;
      c.name = case_name(c, model_varies);
      finalize(c);
      if (names.insert(c.name).second) cases.push_back(std::move(c));
      size_t d = 0;
      for (; d < dims.size(); ++d) {
        if (++index[d] < dims[d].second->size()) break;
        index[d] = 0;
      }
      if (d == dims.size()) break;
    }
  }
  if (case_node) {
    const toml::array* list = case_node->as_array();
    if (!list || !list->is_array_of_tables()) fail(*case_node, "'case' must be [[case]] tables");
    std::vector<std::string> case_keys = axes;
    case_keys.push_back("name");
    case_keys.push_back("timeout_s");
    bool models_differ = model_varies;
    for (const toml::node& e : *list) {
      const toml::table& t = *e.as_table();
      if (const toml::node* m = t.get("model"); m && m->is_string() && *m->value<std::string>() != base.model)
        models_differ = true;
    }
    for (const toml::node& e : *list) {
      const toml::table& t = *e.as_table();
      check_keys(t, case_keys, "[[case]]");
      SuiteCase c = base;
      for (auto&& [k, v] : t) {
        if (k.str() == "timeout_s") {
          c.timeout_s = get_number(v, "timeout_s");
          if (!(*c.timeout_s > 0)) fail(v, "'timeout_s' must be positive");
        } else if (k.str() != "name") {
          apply(c, std::string(k.str()), v);
        }
      }
      // Explicitly written settings that cannot apply are mistakes.
      if (t.get("links") && c.transport != "tcp")
        fail(*t.get("links"), fmt::format("'links' applies to the tcp transport only, this case "
                                          "uses '{}'", c.transport));
      if (t.get("bucket_mb") && c.reduce == "per-tensor")
        fail(*t.get("bucket_mb"), "'bucket_mb' applies to fused and overlap(-poll), not per-tensor");
      if (c.kind == CaseKind::kAllReduce || c.reduce == "per-tensor") c.bucket_mb.reset();
      if (c.transport != "tcp") c.links = 0;
      const toml::node* name = t.get("name");
      c.name = name ? get_string(*name, "name") : case_name(c, models_differ);
      if (c.name.empty()) fail(*name, "case name must not be empty");
      finalize(c);
      if (!names.insert(c.name).second) {
        fail(e, fmt::format("duplicate case '{}' (give it a distinct 'name')", c.name));
      }
      cases.push_back(std::move(c));
    }
  }
  suite.cases = std::move(cases);
  return suite;
}

}  // namespace

nlohmann::json SuiteCase::to_json() const {
  nlohmann::json j = {
      {"name", name},
      {"kind", kind == CaseKind::kTrain ? "train" : "allreduce"},
      {"ranks", ranks},
      {"threads", threads},
      {"transport", transport},
      {"links", links},
  };
  if (kind == CaseKind::kTrain) {
    j["model"] = model;
    j["mode"] = mode;
    j["reduce"] = reduce;
    j["bucket_mb"] = bucket_mb ? nlohmann::json(*bucket_mb) : nlohmann::json(nullptr);
    j["data"] = data;
    j["tokenizer"] = tokenizer;
    j["batch"] = batch;
    j["block"] = block;
    j["steps"] = steps;
    j["warmup_steps"] = warmup_steps;
    j["eval_every"] = eval_every;
    j["shard"] = shard;
    j["lr"] = lr ? nlohmann::json(*lr) : nlohmann::json(nullptr);
    j["extra_args"] = extra_args;
  } else {
    j["sweep"] = {{"min_bytes", sweep.min_bytes}, {"max_bytes", sweep.max_bytes},
                  {"factor", sweep.factor},       {"iters", sweep.iters},
                  {"warmup", sweep.warmup}};
  }
  if (!skip_reason.empty()) j["skip_reason"] = skip_reason;
  return j;
}

Suite parse_suite(std::string_view toml_text, const std::string& source_name,
                  const std::filesystem::path& base_dir) {
  return Parser(source_name, base_dir).parse(toml_text);
}

Suite load_suite_file(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw Error(fmt::format("suite file {} does not exist", path.string()));
  }
  Suite s = parse_suite(read_file(path), path.string(),
                        std::filesystem::absolute(path).parent_path());
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
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               name_or_path.ends_with(".toml");
  if (looks_like_path) return load_suite_file(name_or_path);
  const std::filesystem::path p = builtin_suites_dir() / (name_or_path + ".toml");
  if (!std::filesystem::is_regular_file(p)) {
    const auto names = builtin_suite_names();
    throw Error(fmt::format("unknown suite '{}': built-in suites are {} (in {}); or give a path "
                            "to a .toml file",
                            name_or_path, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")),
                            builtin_suites_dir().string()));
  }
  return load_suite_file(p);
}

}  // namespace trainscope::suites
