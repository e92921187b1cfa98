// A BatchSource is one rank's view of the training (or validation) data: for
// every global step it yields this rank's rows of that step's global batch.
//
// The data order is a pure function of (data options, seed, step), so any
// step can be produced again: resuming a run is just asking for step s.
//
// Order contract (B = global batch, N = world size, b = B / N, r = rank):
//  * An example is `block` tokens. pad mode: one per document, truncated or
//    padded with end-of-text. pack mode: documents joined by end-of-text and
//    cut into blocks. inputs = example[:-1], targets = example[1:], so a row
//    has seq_len() = block - 1 tokens. With mask_padding, targets at padded
//    positions are -1 (not predicted) except the first end-of-text after the
//    text, which is predicted.
//  * M examples; epoch e uses the permutation P_e of [0, M) derived from
//    (seed, e), or the identity without shuffle. K = floor(M / B) global
//    batches per epoch; global step s is batch k = s % K of epoch e = s / K,
//    made of the examples P_e[kB], ..., P_e[kB + B - 1] (its "rows").
//  * naive (N == 1): all B rows.
//  * duplicated: every rank holds all M examples and takes rows [r*b, (r+1)*b).
//  * sharded, strided (PyTorch's DistributedSampler): rank r takes rows
//    r, r + N, r + 2N, ... of each global batch, so the global batches are the
//    naive run's; it holds only the examples of its rows of the current epoch.
//  * sharded, contiguous: Ms = floor(M / N); rank r holds examples
//    [r*Ms, (r+1)*Ms) (reading only that part of the source where it can),
//    permuted per epoch with Q_e over [0, Ms) from (seed, e); floor(Ms / b)
//    local batches per epoch.
// In pack mode, sharding applies to documents and each rank packs its own.
#ifndef TRAINSCOPE_TRAINING_DATA_BATCH_SOURCE_H_
#define TRAINSCOPE_TRAINING_DATA_BATCH_SOURCE_H_

#include <cstdint>
#include <span>

namespace trainscope::training {

// What one rank holds in memory (all of it in MemoryCategory::kData).
struct DataStats {
  int64_t examples_total = 0;  // examples in the whole dataset (M), if known; else -1
  int64_t examples_held = 0;   // examples this rank holds now
  int64_t tokens_held = 0;     // tokens this rank holds now
  int64_t bytes_held = 0;      // tracked bytes of data this rank holds now
  int64_t bytes_read = 0;      // bytes of source read so far by this rank
  int64_t bytes_scanned = 0;   // bytes read once to index a file (offsets only)
  int64_t bad_records = 0;     // records skipped as bad (skip_bad_records)
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // Rows this rank gets per step (global batch / world size).
  virtual int rows() const = 0;
  // Tokens per row (block - 1).
  virtual int seq_len() const = 0;
  // Global batches (steps) per epoch as this rank sees them.
  virtual int64_t batches_per_epoch() const = 0;

  // Fills this rank's rows for global step `step` (>= 0): inputs and targets,
  // each rows() x seq_len() row-major. A target of -1 is not predicted.
  virtual void batch(int64_t step, std::span<int32_t> inputs, std::span<int32_t> targets) = 0;

  virtual DataStats stats() const = 0;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_BATCH_SOURCE_H_
