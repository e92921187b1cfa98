// Every training option declared once, in one table, and what is derived
// from it: `train`'s flags (cli/train_command.cpp), the suite keys that set
// them and their checks (suites/suite_config.cpp), the flags a suite case's
// command line passes (suites/launch_plan.cpp), the options record of a run
// summary and of a case's recorded config, case names, and typed reading of
// those records back (the report).
//
// A row names the option three ways: its place in the summary's options
// record ("data.source", "lora.rank"), its suite key ("data", "lora_rank",
// also its place in a case's config unless `config` says otherwise) and its
// flag ("--data"). A row without a suite key is a flag of `train` only; a row
// without a flag is recorded only (beta1). Adding an option that suites pass
// through to the trainer is one row here, its field in TrainOptions and its
// use; a row also says whether the suites' PyTorch peer runs it (opt-in).
//
// Thread-safety: the table is built once, then read-only.
#ifndef TRAINSCOPE_OPTIONS_TRAIN_OPTION_TABLE_H_
#define TRAINSCOPE_OPTIONS_TRAIN_OPTION_TABLE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "options/train_options.h"

namespace trainscope::options {

// A flag's check on a number (cli/validators.h words the message).
enum class Check { kNone, kPositive, kNonNegative, kFinite };

// When a value goes on a case's command line, or into its recorded config:
// always; when set (given in the suite, or other than the default); always,
// but null unless set (keeps configs recorded before as they were); never.
enum class Emit { kAlways, kWhenSet, kNullUnlessSet, kNever };

// Typed access to a field of TrainOptions.
template <typename T>
using Ref = T& (*)(TrainOptions&);
// A value read and written as text: an enumeration (its names in `choices`),
// a list or a composite (--lora-targets, --inject-delay). `set` throws
// trainscope::Error naming `where` (a flag or a suite key) for a bad text.
struct TextRef {
  std::string (*get)(const TrainOptions&);
  void (*set)(TrainOptions&, std::string_view text, std::string_view where);
  std::span<const std::string_view> choices = {};
  // Its JSON form when that is not the text (a list of LoRA targets; an
  // unset --inject-delay is null): null functions mean the text.
  nlohmann::json (*get_json)(const TrainOptions&) = nullptr;
  void (*set_json)(TrainOptions&, const nlohmann::json&) = nullptr;
};
using OptionRef = std::variant<Ref<int>, Ref<int64_t>, Ref<uint64_t>, Ref<double>, Ref<std::string>,
                               Ref<bool>, TextRef>;

// When a generated case name carries an option's part; kNever: another
// option's part names it (the LoRA settings are in fine_tune's "lora-rank16").
enum class NameWhen { kAlways, kWhenSet, kWhenVarying, kWhenSetOrVarying, kNever };

struct TrainOption {
  std::string_view summary = {};  // path in the summary's options record; "" = not recorded
  std::string_view flag = {};     // "--comm-dtype"; "" = no flag
  std::string help = {};
  OptionRef ref = {};
  Check check = Check::kNone;  // of the flag
  bool negates = false;        // a boolean flag that clears the value (--no-shuffle)
  // As a suite key: its name ("" = none), its place in a case's config ("" =
  // the key), its bounds there (or `bad`: what is wrong with a number, ""
  // when nothing), and whether a [grid] may vary it.
  std::string_view suite = {};
  std::string_view config = {};
  std::optional<double> min = {}, max = {};
  std::string (*bad)(double) = nullptr;
  bool axis = false;
  Emit command = Emit::kWhenSet;   // on a case's command line
  Emit recorded = Emit::kWhenSet;  // in a case's config
  // Whether the option means anything for these options (the bucket size
  // under per-tensor does not): a suite collapses it when not, and a case's
  // command line and config leave it out.
  bool (*applies)(const TrainOptions&) = nullptr;
  // Its part of a generated case name, e.g. "comm-bf16", and when.
  std::string (*name_part)(const TrainOptions&) = nullptr;
  NameWhen name_when = NameWhen::kWhenSet;
  // Opt-in: whether the PyTorch peer (bench/pytorch/ddp_train.py, a suite
  // case's engine = "pytorch") runs the option, so that a new option is
  // never silently left out of a pytorch case. Null: the peer has no
  // counterpart, and a pytorch case that sets the option other than its
  // default is refused naming it. Otherwise, for the case's value: "" when
  // the peer trains with it as trainscope would, or the option means nothing
  // to the peer (trainscope's own diagnostics); else why not.
  std::string (*pytorch)(const TrainOptions&) = nullptr;

  // The key a case's config records it under.
  std::string_view config_path() const { return config.empty() ? suite : config; }
  bool applies_to(const TrainOptions& o) const { return applies == nullptr || applies(o); }
};

// The table, in the order flags are listed and recorded.
const std::vector<TrainOption>& train_option_table();
// Its rows, declared in train_option_rows.cpp: where an option is added.
std::vector<TrainOption> train_option_rows();
// The row of a suite key or a summary path; null when there is none.
const TrainOption* find_suite_option(std::string_view key);
const TrainOption* find_summary_option(std::string_view path);

// A row's value as JSON (enums and lists by their text), and back: a JSON
// value of the row's type (integers for integers, numbers for doubles,
// strings for text). `set_option_json` throws trainscope::Error naming
// `where` when the value has the wrong type or is out of the row's bounds.
nlohmann::json option_json(const TrainOption& row, const TrainOptions& o);
void set_option_json(const TrainOption& row, TrainOptions& o, const nlohmann::json& value,
                     std::string_view where);
// The value as a command line writes it ("0.001", "bf16", "q_proj,v_proj").
std::string option_text(const TrainOption& row, const TrainOptions& o);
// Whether the row's value is TrainOptions' default; and setting it back.
bool option_is_default(const TrainOption& row, const TrainOptions& o);
void reset_option(const TrainOption& row, TrainOptions& o);

// Why the PyTorch peer cannot run these options ("" when it can), as
// "KEY = VALUE: why" (KEY the suite key, else the flag): the first option
// whose row has no `pytorch` and that is set other than its default, or
// whose value its row's `pytorch` refuses.
std::string pytorch_unsupported(const TrainOptions& o);

// The summary's options record: every row with a summary path (the lora
// object is null unless fine-tuning with LoRA). TrainOptions::to_json.
nlohmann::json options_record(const TrainOptions& o);
// Options from such a record, or from a case's config (`from_config`):
// what it holds, defaults for what it does not; values of the wrong type
// are left at the default (records written by older versions).
TrainOptions options_from_record(const nlohmann::json& record);
TrainOptions options_from_config(const nlohmann::json& config);

}  // namespace trainscope::options

#endif  // TRAINSCOPE_OPTIONS_TRAIN_OPTION_TABLE_H_
