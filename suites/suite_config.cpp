#include "suites/suite_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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
#include "results/allreduce_algorithms.h"
#include "results/link_profiles.h"
#include "suites/launch_plan.h"
#include "training/data/data_options.h"
#include "training/model_config.h"
#include "training/precision.h"
#include "training/trainer.h"

#ifndef TRAINSCOPE_SUITES_SOURCE_DIR
#define TRAINSCOPE_SUITES_SOURCE_DIR "suites"
#endif

namespace trainscope::suites {
namespace {

// mpirun's --bind-to values.
const std::vector<std::string> kBindTo = {"none", "hwthread", "core", "l1cache", "l2cache",
                                          "l3cache", "socket", "numa", "board"};
const std::vector<std::string> kTransports = {"auto", "shm", "tcp"};
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
  std::vector<std::string> keys(bool axes_only) const;

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
  std::string read_link(const toml::node& n) const;
  int read_mpi_algorithm(const toml::node& n) const;
  void read_header(const toml::table& root, Suite& suite);
  SuiteCase read_base(const toml::table& root) const;
  void expand_grid(const toml::node& grid_node, const SuiteCase& base);
  void read_cases(const toml::node& case_node, const SuiteCase& base);
  void check_case_table(const toml::table& t, const SuiteCase& c) const;
  void check_model_and_init_from(const toml::table& t) const;
  std::string case_name(const SuiteCase& c) const;
  void resolve(SuiteCase& c) const;
  void finalize(SuiteCase& c) const;
  std::string setting_skip_reason(const SuiteCase& c) const;
  std::string placement_skip_reason(const SuiteCase& c) const;

  std::string source_;
  std::filesystem::path base_dir_;
  CaseKind kind_ = CaseKind::kTrain;
  std::set<std::string> varying_;  // grid axes with more than one value
  std::vector<SuiteCase> cases_;
  std::set<std::string> names_;
};

const std::vector<Setting>& Parser::settings() {
  using P = const Parser&;
  using N = const toml::node&;
  static const std::vector<Setting> kSettings = {
      // A model replaces an init_from of [base] (and init_from a model): the
      // more specific table wins.
      {"model", true, true, false, [](P p, SuiteCase& c, N n) {
         c.model = p.resolve_model(n, p.get_string(n, "model"));
         c.init_from.clear();
       }},
      {"mode", true, true, false, [](P p, SuiteCase& c, N n) {
         c.mode = p.canonical(n, [&] {
           return training::to_string(training::parse_data_mode(p.get_string(n, "mode"), "mode"));
         });
       }},
      {"ranks", true, true, true, [](P p, SuiteCase& c, N n) { c.ranks = static_cast<int>(p.get_int(n, "ranks", 1)); }},
      {"reduce", true, true, false, [](P p, SuiteCase& c, N n) {
         c.reduce = p.canonical(n, [&] {
           return comm::reduce_strategy_name(comm::parse_reduce_strategy(p.get_string(n, "reduce"), "reduce"));
         });
       }},
      {"bucket_mb", true, true, false, [](P p, SuiteCase& c, N n) { c.bucket_mb = p.get_number(n, "bucket_mb"); }},
      // allreduce-bench has no compute threads: a threads axis would only repeat jobs.
      {"threads", true, true, false, [](P p, SuiteCase& c, N n) { c.threads = static_cast<int>(p.get_int(n, "threads", 0)); }},
      {"transport", true, true, true, [](P p, SuiteCase& c, N n) { c.transport = p.get_string(n, "transport", &kTransports); }},
      {"links", true, true, true, [](P p, SuiteCase& c, N n) { c.links = static_cast<int>(p.get_int(n, "links", 1)); }},
      {"allreduce", true, true, true, [](P p, SuiteCase& c, N n) { c.allreduce = p.get_string(n, "allreduce", &kAllReduce); }},
      {"mpi_algorithm", true, true, true, [](P p, SuiteCase& c, N n) { c.mpi_algorithm = p.read_mpi_algorithm(n); }},
      {"zero", true, true, false, [](P p, SuiteCase& c, N n) { c.zero = static_cast<int>(p.get_int(n, "zero", 0, 1)); }},
      {"comm_dtype", true, true, false, [](P p, SuiteCase& c, N n) {
         c.comm_dtype = p.canonical(n, [&] {
           return comm::comm_dtype_name(comm::parse_comm_dtype(p.get_string(n, "comm_dtype"), "comm_dtype"));
         });
       }},
      {"fine_tune", true, true, false, [](P p, SuiteCase& c, N n) {
         c.fine_tune = p.canonical(n, [&] {
           return training::fine_tune_name(training::parse_fine_tune(p.get_string(n, "fine_tune"), "fine_tune"));
         });
       }},
      {"precision", true, true, false, [](P p, SuiteCase& c, N n) {
         c.precision = p.canonical(n, [&] {
           return training::precision_name(training::parse_precision(p.get_string(n, "precision"), "precision"));
         });
       }},
      // The adapters (sets_up_lora), in the trainer's ranges; lora_layers
      // beyond the model's layers is a skip (finalize): the model may be an axis.
      {"lora_rank", true, true, false, [](P p, SuiteCase& c, N n) { c.lora.rank = static_cast<int>(p.get_int(n, "lora_rank", 1)); }},
      {"lora_alpha", true, true, false, [](P p, SuiteCase& c, N n) {
         c.lora.alpha = p.get_number(n, "lora_alpha");
         if (!(c.lora.alpha > 0)) p.fail(n, fmt::format("'lora_alpha' must be positive, got {}", c.lora.alpha));
       }},
      {"lora_dropout", true, true, false, [](P p, SuiteCase& c, N n) {
         c.lora.dropout = p.get_number(n, "lora_dropout");
         if (!(c.lora.dropout >= 0 && c.lora.dropout < 1)) p.fail(n, fmt::format("'lora_dropout' must be in [0, 1), got {}", c.lora.dropout));
       }},
      {"lora_layers", true, true, false, [](P p, SuiteCase& c, N n) { c.lora.layers = static_cast<int>(p.get_int(n, "lora_layers", 0)); }},
      {"lora_targets", true, true, false, [](P p, SuiteCase& c, N n) {
         c.lora.targets = p.checked(n, [&] { return training::parse_lora_targets(p.get_string(n, "lora_targets"), "lora_targets"); });
       }},
      {"hosts", true, true, true, [](P p, SuiteCase& c, N n) { c.hosts = static_cast<int>(p.get_int(n, "hosts", 1, 250)); }},
      // More than this machine has is a skip (finalize), not an error: a
      // suite written for a bigger machine still reads here.
      {"cores_per_host", true, true, true, [](P p, SuiteCase& c, N n) {
         c.cores_per_host = static_cast<int>(p.get_int(n, "cores_per_host", 1));
       }},
      {"link", true, true, true, [](P p, SuiteCase& c, N n) { c.link = p.read_link(n); }},
      {"tcp_interface", true, true, true, [](P p, SuiteCase& c, N n) {
         c.tcp_interface = p.get_string(n, "tcp_interface");
         if (c.tcp_interface.empty()) p.fail(n, "'tcp_interface' must name an interface, e.g. lo");
       }},
      {"batch", true, true, false, [](P p, SuiteCase& c, N n) {
         if (c.batch_per_rank > 0) p.fail(n, "'batch' (the global batch) does not go with 'batch_per_rank' (the global batch is batch_per_rank x ranks): give one");
         c.batch = static_cast<int>(p.get_int(n, "batch", 1));
       }},
      {"batch_per_rank", true, true, false, [](P p, SuiteCase& c, N n) {
         if (c.batch > 0) p.fail(n, "'batch_per_rank' (the global batch is batch_per_rank x ranks) does not go with 'batch' (the global batch): give one");
         c.batch_per_rank = static_cast<int>(p.get_int(n, "batch_per_rank", 1));
       }},
      {"data", false, true, false, [](P p, SuiteCase& c, N n) { c.data = p.get_string(n, "data"); }},
      {"tokenizer", false, true, false, [](P p, SuiteCase& c, N n) { c.tokenizer = p.get_string(n, "tokenizer"); }},
      {"block", false, true, false, [](P p, SuiteCase& c, N n) { c.block = static_cast<int>(p.get_int(n, "block", 2)); }},
      {"steps", false, true, false, [](P p, SuiteCase& c, N n) { c.steps = p.get_int(n, "steps", 1); }},
      {"warmup_steps", false, true, false, [](P p, SuiteCase& c, N n) { c.warmup_steps = p.get_int(n, "warmup_steps", 0); }},
      {"eval_every", false, true, false, [](P p, SuiteCase& c, N n) { c.eval_every = p.get_int(n, "eval_every", 0); }},
      {"shard", false, true, false, [](P p, SuiteCase& c, N n) {
         c.shard = p.canonical(n, [&] {
           return training::to_string(training::parse_shard_mode(p.get_string(n, "shard"), "shard"));
         });
       }},
      {"lr", false, true, false, [](P p, SuiteCase& c, N n) { c.lr = p.get_number(n, "lr"); }},
      {"init_from", false, true, false, [](P p, SuiteCase& c, N n) {
         c.init_from = p.resolve_init_from(n);
         c.model = c.init_from;
       }},
      {"extra_args", false, true, false, [](P p, SuiteCase& c, N n) {
         const toml::array* a = n.as_array();
         if (!a) p.fail(n, "'extra_args' must be an array of strings");
         c.extra_args.clear();
         for (const toml::node& e : *a) c.extra_args.push_back(p.get_string(e, "extra_args[]"));
       }},
      {"min_bytes", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.min_bytes = p.get_int(n, "min_bytes", 4, std::numeric_limits<int64_t>::max()); }},
      {"max_bytes", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.max_bytes = p.get_int(n, "max_bytes", 4, std::numeric_limits<int64_t>::max()); }},
      {"factor", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.factor = static_cast<int>(p.get_int(n, "factor", 2)); }},
      {"iters", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.iters = static_cast<int>(p.get_int(n, "iters", 1)); }},
      {"warmup", false, false, true, [](P p, SuiteCase& c, N n) { c.sweep.warmup = static_cast<int>(p.get_int(n, "warmup", 0)); }},
  };
  return kSettings;
}

// The keys this kind of suite has, in the table's order (the grid expands
// its axes in this order, so case order does not depend on the file's).
std::vector<std::string> Parser::keys(bool axes_only) const {
  std::vector<std::string> out;
  for (const Setting& s : settings()) {
    const bool kind = kind_ == CaseKind::kTrain ? s.train : s.allreduce;
    if (kind && (s.axis || !axes_only)) out.emplace_back(s.key);
  }
  return out;
}

void Parser::apply(SuiteCase& c, const std::string& key, const toml::node& n) const {
  for (const Setting& s : settings()) {
    if (s.key == key) return s.apply(*this, c, n);
  }
  fail(n, fmt::format("unknown key '{}'", key));
}

// A link profile the virtual cluster knows, or a rate in tc's syntax.
std::string Parser::read_link(const toml::node& n) const {
  const std::string v = get_string(n, "link");
  const std::optional<double> bits = results::link_bits_per_second(v);
  if (!bits) {
    fail(n, fmt::format("unknown link '{}' (expected a profile: {}; or a rate in tc's syntax "
                        "such as 500mbit)",
                        v, results::link_profile_names()));
  }
  if (!results::find_link_profile(v) &&
      !(*bits >= results::kMinLinkBitsPerSecond && *bits <= results::kMaxLinkBitsPerSecond)) {
    fail(n, fmt::format("link '{}' is {:g} bit/s; the shaper of the virtual cluster takes 1mbit "
                        "to 1tbit",
                        v, *bits));
  }
  return v;
}

// An Open MPI coll_tuned_allreduce_algorithm number; the error lists them.
int Parser::read_mpi_algorithm(const toml::node& n) const {
  const int64_t v = get_int(n, "mpi_algorithm", std::numeric_limits<int>::min());
  if (v < 0 || v > results::kMaxOpenMpiAllReduceAlgorithm) {
    fail(n, fmt::format("unknown mpi_algorithm {} (Open MPI's coll_tuned_allreduce_algorithm: {})",
                        v, results::open_mpi_algorithm_list()));
  }
  return static_cast<int>(v);
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

// "lora", then the adapters' settings that are not the trainer's defaults:
// "lora-rank16-alpha32-drop0.1-last2-q.k.v.o".
std::string lora_name(const training::LoraConfig& l) {
  const training::LoraConfig defaults;
  std::string name = "lora";
  if (l.rank != defaults.rank) name += fmt::format("-rank{}", l.rank);
  if (l.alpha != defaults.alpha) name += fmt::format("-alpha{}", l.alpha);
  if (l.dropout != defaults.dropout) name += fmt::format("-drop{}", l.dropout);
  if (l.layers != defaults.layers) name += fmt::format("-last{}", l.layers);
  if (l.targets != defaults.targets) {
    std::vector<std::string> targets;
    for (training::LoraTarget t : l.targets) {
      std::string_view n = training::lora_target_name(t);
      if (n.ends_with("_proj")) n.remove_suffix(5);  // the short names parse_lora_target takes
      targets.emplace_back(n);
    }
    name += fmt::format("-{}", fmt::join(targets, "."));
  }
  return name;
}

std::string Parser::case_name(const SuiteCase& c) const {
  std::vector<std::string> parts;
  if (varying_.contains("model")) parts.push_back(std::filesystem::path(c.model).stem().string());
  parts.push_back(c.kind == CaseKind::kAllReduce ? std::string("allreduce") : c.mode);
  parts.push_back(fmt::format("r{}", c.ranks));
  if (c.kind == CaseKind::kTrain) {
    parts.push_back(c.reduce);
    if (c.bucket_mb) {
      parts.push_back(*c.bucket_mb <= 0 ? std::string("whole") : fmt::format("b{}", *c.bucket_mb));
    }
  }
  // "ar-shm", not "shm": the shm transport has that part already.
  if (c.allreduce != results::kDefaultAllReduceAlgorithm) parts.push_back("ar-" + c.allreduce);
  if (c.mpi_algorithm > 0) parts.push_back(fmt::format("alg{}", c.mpi_algorithm));
  if (c.zero > 0) parts.push_back(fmt::format("zero{}", c.zero));
  // "...-bf16-comm-bf16": the GEMMs' precision, then what the wire carries ("comm-", so it never
  // reads as the precision).
  if (c.precision != "fp32") parts.push_back(c.precision);
  if (c.comm_dtype != "fp32") parts.push_back("comm-" + c.comm_dtype);
  if (c.fine_tune != "full") {
    parts.push_back(lora_name(c.lora));
  } else if (varying_.contains("fine_tune")) {
    parts.push_back(c.fine_tune);
  }
  if (c.threads > 0) parts.push_back(fmt::format("t{}", c.threads));
  if (c.transport != "auto") parts.push_back(c.transport);
  if (c.links > 0) parts.push_back(fmt::format("l{}", c.links));
  if (c.hosts > 1) parts.push_back(fmt::format("h{}", c.hosts));
  if (c.cores_per_host > 0) parts.push_back(fmt::format("c{}", c.cores_per_host));
  if (!c.link.empty()) parts.push_back(c.link);
  if (!c.tcp_interface.empty() && varying_.contains("tcp_interface")) parts.push_back(c.tcp_interface);
  if (c.batch_per_rank > 0) parts.push_back(fmt::format("bpr{}", c.batch_per_rank));
  if (varying_.contains("batch")) parts.push_back(fmt::format("gb{}", c.batch));
  return fmt::format("{}", fmt::join(parts, "-"));
}

// Defaults that depend on other settings, and axes that do not apply
// collapsing rather than multiplying the cases.
void Parser::resolve(SuiteCase& c) const {
  if (c.ranks == 0) c.ranks = c.hosts;  // one rank on each host
  if (c.batch_per_rank > 0) c.batch = c.batch_per_rank * c.ranks;
  if (c.kind == CaseKind::kAllReduce || c.reduce == "per-tensor") c.bucket_mb.reset();
  if (c.transport != "tcp") c.links = 0;
  if (c.hosts <= 1) c.link.clear();
  // One rank all-reduces nothing; Open MPI's algorithms are its MPI_Allreduce's.
  if (c.ranks == 1) c.allreduce = std::string(results::kDefaultAllReduceAlgorithm);
  if (c.ranks == 1 || c.allreduce != results::kDefaultAllReduceAlgorithm) c.mpi_algorithm = 0;
  // Adapters are set up for LoRA only.
  if (c.fine_tune != "lora") c.lora = training::LoraConfig();
}

// Skip reasons for well-formed combinations that cannot run: what the case
// asks of the trainer, then where and over what it runs.
void Parser::finalize(SuiteCase& c) const {
  c.skip_reason = setting_skip_reason(c);
  if (c.skip_reason.empty()) c.skip_reason = placement_skip_reason(c);
}

std::string Parser::setting_skip_reason(const SuiteCase& c) const {
  const bool train = c.kind == CaseKind::kTrain;
  if (train && c.mode == "naive" && c.ranks > 1) {
    return fmt::format("naive runs one process; this case has {} ranks", c.ranks);
  }
  if (train && c.batch > 0 && c.batch % c.ranks != 0) {
    return fmt::format("global batch {} is not divisible by {} ranks", c.batch, c.ranks);
  }
  // The trainer refuses these three (training/run/setup.cpp, check_zero).
  if (c.zero > 0 && c.reduce != "fused") {
    return fmt::format("ZeRO-1 shards the optimizer state of the fused reduction (reduce = "
                       "\"fused\"); this case reduces with {}",
                       c.reduce);
  }
  if (c.zero > 0 && c.ranks < 2) {
    return "ZeRO-1 shards the optimizer state over the ranks; this case has 1 rank";
  }
  if (c.zero > 0 && c.allreduce == "hier") {
    return "ZeRO-1 is not offered with allreduce = \"hier\" (its reduce-scatter would need a "
           "third level); use mpi or shm";
  }
  // A CPU without bf16 instructions: the trainer's own refusal, as a skip, so
  // a suite written for another machine still runs its fp32 cases here.
  if (train && c.precision == "bf16") {
    try {
      training::check_precision_supported(training::Precision::kBf16, kernels::detect_cpu_isa());
    } catch (const Error& e) {
      return e.what();
    }
  }
  // The last N layers of this case's model (the trainer's own check and words).
  if (c.fine_tune == "lora" && c.lora.layers > 0) {
    try {
      c.lora.validate(training::resolve_model(c.model));
    } catch (const Error& e) {
      return e.what();
    }
  }
  return "";
}

std::string Parser::placement_skip_reason(const SuiteCase& c) const {
  const int cores = cores_available();
  if (c.ranks % c.hosts != 0) {
    return fmt::format("{} ranks do not spread evenly over {} hosts", c.ranks, c.hosts);
  }
  if (c.cores_per_host > 0 && c.hosts * c.cores_per_host > cores) {
    return fmt::format("{} hosts x {} cores need {} cores; this machine has {}", c.hosts,
                       c.cores_per_host, c.hosts * c.cores_per_host, cores);
  }
  if (c.transport == "shm" && c.hosts > 1) {
    return fmt::format("shm carries messages within one host; this case spans {} hosts", c.hosts);
  }
  if (c.allreduce == "shm" && c.hosts > 1) {
    return fmt::format("shm reduces within one host; this case spans {} hosts: use hier", c.hosts);
  }
  if (c.transport != "auto" && c.ranks == 1) {
    return fmt::format("one rank sends nothing over the {} transport", c.transport);
  }
  if (c.links > 4) {
    return fmt::format(
        "btl_tcp_links {} hangs Open MPI 4.1 once a message exceeds the eager limit (at most 4; "
        "docs/SUITES.md, known problems)",
        c.links);
  }
  return "";
}

void Parser::read_header(const toml::table& root, Suite& suite) {
  check_keys(root,
             {"name", "description", "kind", "repetitions", "timeout_s", "bind_to",
              "tcp_interface", "base", "grid", "case"},
             "the suite");
  const toml::node* name = root.get("name");
  if (!name) throw Error(fmt::format("{}: missing required key 'name'", source_));
  suite.name = get_string(*name, "name");
  if (suite.name.empty()) fail(*name, "'name' must not be empty");
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
}

SuiteCase Parser::read_base(const toml::table& root) const {
  SuiteCase base;
  base.kind = kind_;
  base.model = "seed";
  base.ranks = 0;  // unless given: one per host
  const toml::node* base_node = root.get("base");
  if (!base_node) return base;
  const toml::table* t = base_node->as_table();
  if (!t) fail(*base_node, "'base' must be a table");
  check_keys(*t, keys(false), "[base]");
  check_model_and_init_from(*t);
  for (auto&& [k, v] : *t) apply(base, std::string(k.str()), v);
  if (kind_ == CaseKind::kTrain && base.steps <= base.warmup_steps) {
    const toml::node* s = t->get("steps");
    fail(s ? *s : *base_node,
         fmt::format("steps ({}) must exceed warmup_steps ({}): no step would be measured",
                     base.steps, base.warmup_steps));
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
    for (size_t d = 0; d < dims.size(); ++d) apply(c, dims[d].first, *dims[d].second->get(index[d]));
    resolve(c);
    c.name = case_name(c);
    finalize(c);
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
    fail(*t.get("init_from"), "'init_from' names the model (its config.json): it does not go with "
                              "'model' in the same table");
  }
}

// Explicitly written settings that cannot apply are mistakes.
void Parser::check_case_table(const toml::table& t, const SuiteCase& c) const {
  if (t.get("links") && c.transport != "tcp") {
    fail(*t.get("links"), fmt::format("'links' applies to the tcp transport only, this case "
                                      "uses '{}'",
                                      c.transport));
  }
  if (t.get("bucket_mb") && c.reduce == "per-tensor") {
    fail(*t.get("bucket_mb"), "'bucket_mb' applies to fused and overlap(-poll), not per-tensor");
  }
  if (t.get("link") && c.hosts <= 1) {
    fail(*t.get("link"), "'link' applies between hosts: give this case hosts = 2 or more");
  }
  for (const Setting& s : settings()) {
    const std::string_view key = s.key;
    if (sets_up_lora(key) && t.get(key) && c.fine_tune != "lora") {
      fail(*t.get(key), fmt::format("'{}' sets up LoRA adapters: it goes with fine_tune = \"lora\"; "
                                    "this case fine-tunes '{}'",
                                    key, c.fine_tune));
    }
  }
  if (t.get("mpi_algorithm") && c.allreduce != results::kDefaultAllReduceAlgorithm) {
    fail(*t.get("mpi_algorithm"),
         fmt::format("'mpi_algorithm' chooses Open MPI's algorithm for allreduce = \"mpi\"; this "
                     "case uses '{}'",
                     c.allreduce));
  }
}

void Parser::read_cases(const toml::node& case_node, const SuiteCase& base) {
  const toml::array* list = case_node.as_array();
  if (!list || !list->is_array_of_tables()) fail(case_node, "'case' must be [[case]] tables");
  std::vector<std::string> case_keys = keys(true);
  case_keys.push_back("name");
  case_keys.push_back("timeout_s");
  // A case's own flags (e.g. --inject-delay) and starting weights, instead of [base]'s.
  if (kind_ == CaseKind::kTrain) case_keys.insert(case_keys.end(), {"extra_args", "init_from"});
  // Settings the cases vary name their value in the generated names.
  for (const toml::node& e : *list) {
    const toml::node* m = e.as_table()->get("model");
    if (m && m->is_string() && *m->value<std::string>() != base.model) varying_.insert("model");
    const toml::node* f = e.as_table()->get("fine_tune");
    if (f && f->is_string() && *f->value<std::string>() != base.fine_tune) varying_.insert("fine_tune");
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
    resolve(c);
    const toml::node* name = t.get("name");
    c.name = name ? get_string(*name, "name") : case_name(c);
    if (c.name.empty()) fail(*name, "case name must not be empty");
    finalize(c);
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
  // Only when set, so that configurations recorded before these existed
  // (baselines compare them) still match.
  if (hosts > 1) j["hosts"] = hosts;
  if (cores_per_host > 0) j["cores_per_host"] = cores_per_host;
  if (!link.empty()) j["link"] = link;
  if (!tcp_interface.empty()) j["tcp_interface"] = tcp_interface;
  if (batch_per_rank > 0) j["batch_per_rank"] = batch_per_rank;
  if (allreduce != results::kDefaultAllReduceAlgorithm) j["allreduce"] = allreduce;
  if (mpi_algorithm > 0) j["mpi_algorithm"] = mpi_algorithm;
  if (zero > 0) j["zero"] = zero;
  if (comm_dtype != "fp32") j["comm_dtype"] = comm_dtype;
  if (fine_tune != "full") {
    j["fine_tune"] = fine_tune;
    j["lora"] = training::lora_options_json(lora);  // as the trainer records its options
  }
  if (precision != "fp32") j["precision"] = precision;
  if (!init_from.empty()) j["init_from"] = init_from;
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
