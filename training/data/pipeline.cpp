#include "training/data/pipeline.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "base/check.h"
#include "training/data/records.h"
#include "kernels/storage.h"
#include "training/data/document_source.h"
#include "training/data/shuffle.h"

namespace trainscope::training {
namespace {

using kernels::MemoryCategory;
template <typename T>
using DataVector = std::vector<T, kernels::TrackedAllocator<T>>;
template <typename T>
DataVector<T> data_vector() {
  return DataVector<T>(kernels::TrackedAllocator<T>(MemoryCategory::kData));
}

// Documents tokenized per parallel wave; bounds the extra memory of a load
// to one wave's tokens.
constexpr int64_t kWaveDocs = 2048;

// Tokens of a set of documents, one after another.
struct TokenStore {
  DataVector<int32_t> tokens = data_vector<int32_t>();
  DataVector<int64_t> offsets = data_vector<int64_t>();  // size() + 1 entries in pad mode
  // --mask-prompt (pad mode): each example's leading tokens up to and with
  // its last assistant header, which the loss leaves out.
  DataVector<int32_t> prompt_tokens = data_vector<int32_t>();

  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  void clear() {
    DataVector<int32_t>(data_vector<int32_t>()).swap(tokens);
    DataVector<int64_t>(data_vector<int64_t>()).swap(offsets);
    DataVector<int32_t>(data_vector<int32_t>()).swap(prompt_tokens);
  }
  int64_t bytes() const {
    return static_cast<int64_t>(tokens.capacity() * sizeof(int32_t) +
                                offsets.capacity() * sizeof(int64_t) +
                                prompt_tokens.capacity() * sizeof(int32_t));
  }
};

// The assistant's turn starts after the last "<|assistant|>\n" of a rendered
// chat (records.h): the prompt and the answer are tokenized apart, so the
// prompt's token count is exact whatever the tokenizer (as mlx-lm does).
// Returns the prompt's token count; Error naming the document without one.
int64_t encode_prompt_and_answer(const Tokenizer& tokenizer, std::string_view text,
                                 const DocumentSource& docs, int64_t doc,
                                 std::vector<int32_t>* out) {
  const std::string header = chat_header("assistant");
  const std::size_t at = text.rfind(header);
  if (at == std::string_view::npos) {
    throw Error(
        fmt::format("--mask-prompt trains on the assistant's turn, and {} document {} "
                    "has none (a text record, not a chat or instruction)",
                    docs.name(), doc));
  }
  tokenizer.encode(text.substr(0, at + header.size()), out);
  const auto prompt = static_cast<int64_t>(out->size());
  tokenizer.encode(text.substr(at + header.size()), out);
  return prompt;
}

// Reads and tokenizes documents `ids` (in that order) into *store. pad:
// each document keeps at most `max_tokens` tokens; pack (append_eot): each is
// followed by end-of-text and no offsets are kept.
void load_documents(const DocumentSource& docs, const Tokenizer& tokenizer,
                    std::span<const int64_t> ids, int64_t max_tokens, bool append_eot,
                    bool mask_prompt, int threads, TokenStore* store) {
  store->clear();
  if (!append_eot) {
    store->offsets.reserve(ids.size() + 1);
    store->offsets.push_back(0);
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  const int nthreads = threads > 0 ? threads : omp_get_max_threads();
  std::vector<DataVector<int32_t>> wave;
  std::vector<int32_t> wave_prompt;
  // Each wave's tokens in one exact block; joined once at the end. Linear
  // time (appending to one growing vector copies it at every reallocation)
  // and a peak of about twice the tokens, as with any single final block.
  std::vector<DataVector<int32_t>> chunks;
  int64_t total = 0;
  for (int64_t first = 0; first < n; first += kWaveDocs) {
    const int64_t count = std::min(kWaveDocs, n - first);
    wave.assign(count, data_vector<int32_t>());
    wave_prompt.assign(count, 0);
    std::exception_ptr error;
    int64_t error_at = n;
#pragma omp parallel num_threads(nthreads)
    {
      std::string text;
      std::vector<int32_t> ids_scratch;
#pragma omp for schedule(dynamic, 16)
      for (int64_t j = 0; j < count; ++j) {
        try {
          docs.text(ids[first + j], &text);
          ids_scratch.clear();
          int64_t prompt = 0;
          if (mask_prompt) {
            prompt = encode_prompt_and_answer(tokenizer, text, docs, ids[first + j], &ids_scratch);
          } else {
            tokenizer.encode(text, &ids_scratch);
          }
          std::size_t keep = ids_scratch.size();
          if (max_tokens >= 0) keep = std::min<std::size_t>(keep, max_tokens);
          wave_prompt[j] = static_cast<int32_t>(std::min<int64_t>(prompt, keep));
          wave[j].reserve(keep + (append_eot ? 1 : 0));
          wave[j].assign(ids_scratch.begin(), ids_scratch.begin() + keep);
          if (append_eot) wave[j].push_back(tokenizer.eot_id());
        } catch (...) {
          // Report the first failing document in order, whatever the threads.
#pragma omp critical(trainscope_data_load_error)
          if (first + j < error_at) {
            error_at = first + j;
            error = std::current_exception();
          }
        }
      }
    }
    if (error) std::rethrow_exception(error);
    std::size_t wave_tokens = 0;
    for (const auto& w : wave) wave_tokens += w.size();
    DataVector<int32_t>& chunk = chunks.emplace_back(data_vector<int32_t>());
    chunk.reserve(wave_tokens);
    for (std::size_t j = 0; j < wave.size(); ++j) {
      auto& w = wave[j];
      chunk.insert(chunk.end(), w.begin(), w.end());
      total += static_cast<int64_t>(w.size());
      if (!append_eot) store->offsets.push_back(total);
      if (mask_prompt) store->prompt_tokens.push_back(wave_prompt[j]);
      DataVector<int32_t>(data_vector<int32_t>()).swap(w);
    }
  }
  store->tokens.reserve(static_cast<std::size_t>(total));
  for (auto& chunk : chunks) {
    store->tokens.insert(store->tokens.end(), chunk.begin(), chunk.end());
    DataVector<int32_t>(data_vector<int32_t>()).swap(chunk);
  }
}

class DataPipeline final : public BatchSource {
 public:
  DataPipeline(const options::DataOptions& options, const Tokenizer& tokenizer,
               std::unique_ptr<DocumentSource> docs)
      : options_(options), tokenizer_(tokenizer), docs_(std::move(docs)) {
    const int n = options_.world_size;
    const int r = options_.rank;
    rows_ = options_.global_batch / n;
    const bool sharded = options_.data_mode == options::DataMode::kSharded;
    const int64_t D = docs_->size();

    if (options_.mode == options::BatchMode::kPack) {
      // Which documents this rank packs.
      DataVector<int64_t> ids = data_vector<int64_t>();
      if (!sharded) {
        ids.resize(D);
        std::iota(ids.begin(), ids.end(), int64_t{0});
      } else {
        const int64_t per_rank = D / n;
        if (per_rank == 0) throw too_small(D, "documents");
        ids.resize(per_rank);
        const bool contiguous = options_.shard == options::ShardMode::kContiguous;
        // A contiguous rank forgets the rest of the source (its index too).
        if (contiguous) docs_->keep_range(r * per_rank, (r + 1) * per_rank);
        for (int64_t j = 0; j < per_rank; ++j) ids[j] = contiguous ? j : r + j * int64_t{n};
      }
      load_documents(*docs_, tokenizer_, ids, -1, /*append_eot=*/true, /*mask_prompt=*/false,
                     options_.threads, &store_);
      held_ = static_cast<int64_t>(store_.tokens.size()) / options_.block;
      store_.tokens.resize(held_ * options_.block);
      store_.tokens.shrink_to_fit();
      if (!sharded) {
        total_ = held_;
        if (held_ < options_.global_batch) throw too_small(held_, "packed blocks");
        batches_ = held_ / options_.global_batch;
      } else {
        total_ = -1;
        if (held_ < rows_) {
          throw Error(fmt::format(
              "dataset too small: rank {} packs its {} documents into {} blocks of {} tokens, "
              "fewer than its {} rows per step (global batch {} over {} ranks)",
              r, ids.size(), held_, options_.block, rows_, options_.global_batch, n));
        }
        batches_ = held_ / rows_;
      }
      return;
    }

    total_ = D;
    if (sharded && options_.shard == options::ShardMode::kContiguous) {
      const int64_t per_rank = D / n;
      if (per_rank < rows_) throw too_small(D, "examples");
      // Keep only this rank's part of the source (its index too).
      docs_->keep_range(r * per_rank, (r + 1) * per_rank);
      held_ = per_rank;
      batches_ = per_rank / rows_;
      DataVector<int64_t> ids = data_vector<int64_t>();
      ids.resize(per_rank);
      std::iota(ids.begin(), ids.end(), int64_t{0});
      load_documents(*docs_, tokenizer_, ids, options_.block, false, options_.mask_prompt,
                     options_.threads, &store_);
      return;
    }
    if (D < options_.global_batch) throw too_small(D, "examples");
    batches_ = D / options_.global_batch;
    if (sharded) {
      load_epoch(0);  // strided: only this epoch's rows
      return;
    }
    held_ = D;
    DataVector<int64_t> ids = data_vector<int64_t>();
    ids.resize(D);
    std::iota(ids.begin(), ids.end(), int64_t{0});
    load_documents(*docs_, tokenizer_, ids, options_.block, false, options_.mask_prompt,
                   options_.threads, &store_);
  }

  int rows() const override { return rows_; }
  int seq_len() const override { return options_.block - 1; }
  int64_t batches_per_epoch() const override { return batches_; }

  void batch(int64_t step, std::span<int32_t> inputs, std::span<int32_t> targets) override {
    TS_CHECK(step >= 0) << "step " << step;
    const std::size_t need = static_cast<std::size_t>(rows_) * seq_len();
    TS_CHECK(inputs.size() == need && targets.size() == need)
        << "batch spans hold " << inputs.size() << " and " << targets.size() << ", need " << need;
    const int64_t epoch = step / batches_;
    const int64_t k = step % batches_;
    const int64_t B = options_.global_batch;
    const int r = options_.rank;
    const bool sharded = options_.data_mode == options::DataMode::kSharded;
    const bool strided_pad = sharded && options_.mode == options::BatchMode::kPad &&
                             options_.shard == options::ShardMode::kStrided;
    if (strided_pad) {
      load_epoch(epoch);
    } else {
      ensure_permutation(epoch, held_);
    }
    for (int i = 0; i < rows_; ++i) {
      int64_t slot;
      if (strided_pad) {
        slot = row_slot_[k * rows_ + i];
      } else if (sharded) {
        slot = perm_[k * rows_ + i];  // local batches over what this rank holds
      } else if (options_.data_mode == options::DataMode::kNaive) {
        slot = perm_[k * B + i];
      } else {
        slot = perm_[k * B + int64_t{r} * rows_ + i];
      }
      write_row(slot, inputs.subspan(i * seq_len(), seq_len()),
                targets.subspan(i * seq_len(), seq_len()));
    }
  }

  DataStats stats() const override {
    DataStats s;
    s.examples_total = total_;
    s.examples_held = options_.mode == options::BatchMode::kPack ? held_ : store_.size();
    s.tokens_held = static_cast<int64_t>(store_.tokens.size());
    s.bytes_held = store_.bytes() +
                   static_cast<int64_t>(perm_.capacity() * sizeof(int64_t) +
                                        row_slot_.capacity() * sizeof(int64_t)) +
                   docs_->bytes_held();
    s.bytes_read = docs_->bytes_read();
    s.bytes_scanned = docs_->bytes_scanned();
    s.bad_records = docs_->bad_records();
    return s;
  }

 private:
  Error too_small(int64_t count, std::string_view what) const {
    return Error(fmt::format(
        "dataset too small: {} {} ({}) cannot give each of the {} ranks {} rows per step "
        "(global batch {}){}",
        count, what, docs_->name(), options_.world_size, rows_, options_.global_batch,
        options_.data_mode == options::DataMode::kSharded
            ? fmt::format(" after {} sharding", enum_name(options_.shard))
            : ""));
  }

  void ensure_permutation(int64_t epoch, int64_t size) {
    if (perm_epoch_ == epoch && static_cast<int64_t>(perm_.size()) == size) return;
    perm_.resize(size);
    if (options_.shuffle) {
      epoch_permutation(options_.seed, epoch, perm_);
    } else {
      std::iota(perm_.begin(), perm_.end(), int64_t{0});
    }
    perm_epoch_ = epoch;
  }

  // Strided sharding: hold exactly the examples of this rank's rows of
  // `epoch`, read in file order, with row_slot_ mapping row -> held slot.
  void load_epoch(int64_t epoch) {
    if (loaded_epoch_ == epoch) return;
    // Unshuffled, every epoch has the same order: keep what is held.
    if (!options_.shuffle && loaded_epoch_ >= 0) {
      loaded_epoch_ = epoch;
      return;
    }
    const int64_t D = docs_->size();
    ensure_permutation(epoch, D);
    const int64_t count = batches_ * rows_;
    std::vector<std::pair<int64_t, int64_t>> order(count);  // (example, row)
    for (int64_t k = 0; k < batches_; ++k) {
      for (int i = 0; i < rows_; ++i) {
        const int64_t row = k * rows_ + i;
        order[row] = {
            perm_[k * options_.global_batch + options_.rank + int64_t{i} * options_.world_size],
            row};
      }
    }
    std::sort(order.begin(), order.end());
    DataVector<int64_t> ids = data_vector<int64_t>();
    ids.resize(count);
    row_slot_.resize(count);
    for (int64_t j = 0; j < count; ++j) {
      ids[j] = order[j].first;
      row_slot_[order[j].second] = j;
    }
    load_documents(*docs_, tokenizer_, ids, options_.block, false, options_.mask_prompt,
                   options_.threads, &store_);
    held_ = count;
    loaded_epoch_ = epoch;
  }

  void write_row(int64_t slot, std::span<int32_t> in, std::span<int32_t> tgt) const {
    const int T = options_.block;
    const int32_t eot = tokenizer_.eot_id();
    if (options_.mode == options::BatchMode::kPack) {
      const int32_t* ex = store_.tokens.data() + slot * T;
      std::copy(ex, ex + T - 1, in.begin());
      std::copy(ex + 1, ex + T, tgt.begin());
      return;
    }
    const int32_t* ex = store_.tokens.data() + store_.offsets[slot];
    const int64_t len = store_.offsets[slot + 1] - store_.offsets[slot];  // <= T
    const int64_t prompt = options_.mask_prompt ? store_.prompt_tokens[slot] : 0;
    for (int j = 0; j < T - 1; ++j) {
      in[j] = j < len ? ex[j] : eot;
      const int p = j + 1;  // example position of this target
      if (p < prompt) {
        tgt[j] = -1;  // the prompt is context, not something to learn
      } else if (p < len) {
        tgt[j] = ex[p];
      } else {
        tgt[j] = (options_.mask_padding && p > len) ? -1 : eot;
      }
    }
  }

  options::DataOptions options_;
  const Tokenizer& tokenizer_;
  std::unique_ptr<DocumentSource> docs_;
  int rows_ = 0;
  int64_t batches_ = 0;
  int64_t total_ = 0;  // examples in the whole dataset, -1 if unknown
  int64_t held_ = 0;   // examples (or blocks) this rank holds
  TokenStore store_;
  DataVector<int64_t> perm_ = data_vector<int64_t>();
  int64_t perm_epoch_ = -1;
  DataVector<int64_t> row_slot_ = data_vector<int64_t>();
  int64_t loaded_epoch_ = -1;
};

}  // namespace

namespace {

// A data set that cannot fit in memory is a request this machine cannot
// meet: say which source, not std::bad_alloc.
std::unique_ptr<BatchSource> make_pipeline(const options::DataOptions& options,
                                           const Tokenizer& tokenizer,
                                           std::unique_ptr<DocumentSource> docs) {
  const int64_t documents = docs->size();
  try {
    return std::make_unique<DataPipeline>(options, tokenizer, std::move(docs));
  } catch (const std::bad_alloc&) {
    throw Error(
        fmt::format("data source '{}': its {} documents do not fit in this machine's "
                    "memory",
                    options.source, documents));
  }
}

}  // namespace

std::unique_ptr<BatchSource> open_batch_source(const options::DataOptions& options,
                                               const Tokenizer& tokenizer) {
  options::validate_options(options);
  return make_pipeline(options, tokenizer, open_document_source(options, options.split));
}

std::unique_ptr<BatchSource> open_validation_source(const options::DataOptions& options,
                                                    const Tokenizer& tokenizer) {
  options::DataOptions valid = options;
  valid.split = "valid";
  valid.shuffle = false;
  options::validate_options(valid);
  auto docs = open_document_source(valid, valid.split, /*missing_split_ok=*/true);
  if (!docs) return nullptr;
  return make_pipeline(valid, tokenizer, std::move(docs));
}

}  // namespace trainscope::training
