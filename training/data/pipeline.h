// The data pipeline's entry points: open the BatchSource of one rank for the
// training split (and, when the source has one, the validation split).
//
// What a rank holds (all of it tracked in MemoryCategory::kData):
//  * naive / duplicated: every example's tokens (pad: at most `block` per
//    document; pack: the packed stream), plus the epoch's permutation.
//  * sharded strided (pad): the examples of its rows of the current epoch,
//    re-read when the epoch changes, plus the epoch's permutation of [0, M).
//  * sharded contiguous (pad): examples [r*Ms, (r+1)*Ms), Ms = floor(M / N).
//  * sharded, pack mode: the rank's documents (contiguous: a 1/N range;
//    strided: documents r, r+N, ...; floor(D / N) each) packed by the rank
//    into its own blocks and shuffled locally per epoch with Q_e; ranks can
//    then have different numbers of batches per epoch.
// File sources also hold their index (24 bytes per example).
//
// Loading reads and tokenizes documents with OpenMP threads (options.threads)
// in fixed-size waves whose results are appended in document order, so the
// tokens do not depend on the thread count.
//
// Thread-safety: a BatchSource is used by one thread at a time. The Tokenizer
// passed in must outlive it (strided sources tokenize again each epoch).
#ifndef TRAINSCOPE_TRAINING_DATA_PIPELINE_H_
#define TRAINSCOPE_TRAINING_DATA_PIPELINE_H_

#include <memory>

#include "training/data/batch_source.h"
#include "options/data_options.h"
#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

// Opens options.split of options.source for options.rank. Throws
// trainscope::Error for bad options (validate_options), a missing or empty
// source, bad records, or a dataset too small for one batch per rank.
std::unique_ptr<BatchSource> open_batch_source(const options::DataOptions& options,
                                               const Tokenizer& tokenizer);

// The "valid" split of the same source with the same options, except
// split = "valid" and shuffle = false; nullptr when the source has none (a
// single file, a directory without valid.jsonl, builtin with valid_docs=0).
// A validation split too small for the batch and ranks is an Error, as for
// training: lower the batch rather than silently evaluate nothing.
std::unique_ptr<BatchSource> open_validation_source(const options::DataOptions& options,
                                                    const Tokenizer& tokenizer);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_PIPELINE_H_
