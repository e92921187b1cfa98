// Every backward kernel against finite differences in double precision, and
// the float fast paths against double references.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/float16.h"
#include "kernels/matmul_bf16.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax_xent.h"
#include "kernels/swiglu.h"
#include "tests/kernels/gradcheck.h"

namespace trainscope::kernels {
namespace {

using testing::dot;
using testing::expect_gradient_matches;
using testing::random_vector;
using Vec = std::vector<double>;

TEST(MatmulTest, BlasMatchesReference) {
  const int N = 7, C = 13, OC = 5;
  Vec x = random_vector(N * C, 1), w = random_vector(OC * C, 2), dy = random_vector(N * OC, 3);
  Vec y1(N * OC), y2(N * OC);
  matmul_forward(y1.data(), x.data(), w.data(), N, C, OC);
  matmul_forward_reference(y2.data(), x.data(), w.data(), N, C, OC);
  for (int i = 0; i < N * OC; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-12);
  Vec dx1(N * C, 0.5), dw1(OC * C, 0.25), dx2(N * C, 0.5), dw2(OC * C, 0.25);
  matmul_backward(dx1.data(), dw1.data(), dy.data(), x.data(), w.data(), N, C, OC);
  matmul_backward_reference(dx2.data(), dw2.data(), dy.data(), x.data(), w.data(), N, C, OC);
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(dx1[i], dx2[i], 1e-12);
  for (int i = 0; i < OC * C; ++i) EXPECT_NEAR(dw1[i], dw2[i], 1e-12);
}

// One row through the decoder's matrix-vector kernel is the matmul's row.
TEST(MatmulTest, MatvecMatchesTheReferenceRow) {
  const int C = 37, OC = 101;  // not multiples of any vector width
  Vec x = random_vector(C, 1), w = random_vector(OC * C, 2);
  Vec y1(OC), y2(OC);
  matvec_forward(y1.data(), x.data(), w.data(), C, OC);
  matmul_forward_reference(y2.data(), x.data(), w.data(), 1, C, OC);
  for (int i = 0; i < OC; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-12) << i;
}

TEST(MatmulTest, BackwardMatchesFiniteDifferences) {
  const int N = 4, C = 6, OC = 3;
  Vec x = random_vector(N * C, 4), w = random_vector(OC * C, 5), r = random_vector(N * OC, 6);
  auto loss = [&] {
    Vec y(N * OC);
    matmul_forward(y.data(), x.data(), w.data(), N, C, OC);
    return dot(y, r);
  };
  Vec dx(N * C, 0), dw(OC * C, 0);
  matmul_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), N, C, OC);
  expect_gradient_matches("dinp", x, dx, loss);
  expect_gradient_matches("dweight", w, dw, loss);
}

TEST(EmbeddingTest, BackwardMatchesFiniteDifferences) {
  const int N = 6, C = 4, V = 5;
  std::vector<int32_t> tokens = {1, 3, 1, 0, 4, 1};  // repeats must accumulate
  Vec wte = random_vector(V * C, 7), r = random_vector(N * C, 8);
  auto loss = [&] {
    Vec y(N * C);
    embedding_forward(y.data(), tokens.data(), wte.data(), N, C);
    return dot(y, r);
  };
  Vec dwte(V * C, 0);
  embedding_backward(dwte.data(), r.data(), tokens.data(), N, C);
  expect_gradient_matches("dwte", wte, dwte, loss);
}

TEST(RmsnormTest, BackwardMatchesFiniteDifferences) {
  const int N = 5, C = 8;
  Vec x = random_vector(N * C, 9), w = random_vector(C, 10), r = random_vector(N * C, 11);
  auto loss = [&] {
    Vec y(N * C), rstd(N);
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
    return dot(y, r);
  };
  Vec y(N * C), rstd(N), dx(N * C, 0), dw(C, 0);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  rmsnorm_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), N, C);
  expect_gradient_matches("dinp", x, dx, loss);
  expect_gradient_matches("dweight", w, dw, loss);
}

// The residual add fused into the norm after it must change nothing: same
// sums, same outputs, to the last bit (C = 37 leaves a vector tail).
TEST(RmsnormTest, FusedResidualAddMatchesAddThenNorm) {
  const int N = 6, C = 37;
  auto floats = [](const Vec& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> x = floats(random_vector(N * C, 31)),
                           residual = floats(random_vector(N * C, 32)),
                           w = floats(random_vector(C, 33));
  std::vector<float> sum(N * C), y(N * C), rstd(N);
  add_forward(sum.data(), x.data(), residual.data(), sum.size());
  rmsnorm_forward(y.data(), rstd.data(), sum.data(), w.data(), N, C, 1e-5f);
  std::vector<float> fused_x = x, fused_y(N * C, -1.0f), fused_rstd(N, -1.0f);
  add_rmsnorm_forward(fused_x.data(), fused_y.data(), fused_rstd.data(), residual.data(), w.data(),
                      N, C, 1e-5f);
  EXPECT_EQ(fused_x, sum);
  EXPECT_EQ(fused_y, y);
  EXPECT_EQ(fused_rstd, rstd);
}

// One thread adds the weight's gradient in the rows' pass, several add it by
// column ranges after theirs: the same sums in the same order, so hosts with
// different core counts keep identical replicas. C = 37 leaves a vector tail.
TEST(RmsnormTest, BackwardDoesNotDependOnTheThreadCount) {
  const int N = 67, C = 37;
  auto floats = [](const Vec& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> x = floats(random_vector(N * C, 41)), w = floats(random_vector(C, 42)),
                           dy = floats(random_vector(N * C, 43));
  std::vector<float> y(N * C), rstd(N);
  rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5f);
  auto backward = [&](int threads) {
    std::vector<float> dx = floats(random_vector(N * C, 44)), dw = floats(random_vector(C, 45));
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), N, C);
    omp_set_num_threads(saved);
    dx.insert(dx.end(), dw.begin(), dw.end());
    return dx;
  };
  const std::vector<float> one = backward(1);
  for (int threads : {2, 3}) EXPECT_EQ(backward(threads), one) << threads << " threads";
}

TEST(RopeTest, MatchesRotateHalfFormulaAndBackward) {
  const int B = 2, Tn = 5, NH = 2, hd = 4, ld = NH * hd + 3;  // padded stride
  Vec cs(Tn * hd / 2), sn(Tn * hd / 2);
  rope_tables(cs.data(), sn.data(), Tn, hd, 10000.0f);
  Vec x = random_vector(B * Tn * ld, 12), r = random_vector(B * Tn * ld, 13);
  // Hugging Face: q * cos + rotate_half(q) * sin with emb = cat(freqs, freqs).
  Vec y = x;
  rope_forward(y.data(), cs.data(), sn.data(), B, Tn, NH, hd, ld);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t)
      for (int h = 0; h < NH; ++h)
        for (int i = 0; i < hd; ++i) {
          const int base = (b * Tn + t) * ld + h * hd;
          const int j = i % (hd / 2);
          const double angle = t / std::pow(10000.0, 2.0 * j / hd);
          const double rot = i < hd / 2 ? -x[base + i + hd / 2] : x[base + i - hd / 2];
          EXPECT_NEAR(y[base + i], x[base + i] * std::cos(angle) + rot * std::sin(angle), 1e-12);
        }
  // Padding columns between rows are untouched.
  EXPECT_EQ(y[NH * hd], x[NH * hd]);
  auto loss = [&] {
    Vec z = x;
    rope_forward(z.data(), cs.data(), sn.data(), B, Tn, NH, hd, ld);
    return dot(z, r);
  };
  Vec dx = r;
  rope_backward(dx.data(), cs.data(), sn.data(), B, Tn, NH, hd, ld);
  // Padding entries do not pass through the rotation: their gradient is r itself.
  expect_gradient_matches("dx", x, dx, loss);
}

// The model rotates q's heads and k's, side by side in each row, in one
// call: the same as a call for each (forward and backward), to the last bit.
TEST(RopeTest, QueryAndKeyHeadsInOneCallMatchACallEach) {
  const int B = 2, Tn = 5, NH = 4, NKV = 2, hd = 6, ld = (NH + 2 * NKV) * hd;
  std::vector<float> cs(Tn * hd / 2), sn(Tn * hd / 2);
  rope_tables(cs.data(), sn.data(), Tn, hd, 10000.0f);
  const Vec x = random_vector(B * Tn * ld, 34);
  const std::vector<float> start(x.begin(), x.end());
  for (const bool backward : {false, true}) {
    auto rotate = backward ? rope_backward<float> : rope_forward<float>;
    std::vector<float> each = start, both = start;
    rotate(each.data(), cs.data(), sn.data(), B, Tn, NH, hd, ld);
    rotate(each.data() + NH * hd, cs.data(), sn.data(), B, Tn, NKV, hd, ld);
    rotate(both.data(), cs.data(), sn.data(), B, Tn, NH + NKV, hd, ld);
    EXPECT_EQ(both, each) << (backward ? "backward" : "forward");
    EXPECT_NE(both, start) << "nothing rotated";
  }
}

// The [T, T] probabilities of one (batch, head) as the definition gives
// them, to hold the kernel's log-sum-exp and outputs against.
Vec reference_probabilities(const Vec& qkv, int b, int h, int Tn, int NH, int NKV, int hd, int ld) {
  const int Q = NH * hd, KV = NKV * hd, kvh = h / (NH / NKV);
  Vec P(Tn * Tn, 0.0);
  for (int t = 0; t < Tn; ++t) {
    double mx = -1e300, sum = 0;
    std::vector<double> s(t + 1);
    for (int j = 0; j <= t; ++j) {
      double d = 0;
      for (int i = 0; i < hd; ++i) {
        d += qkv[(b * Tn + t) * ld + h * hd + i] * qkv[(b * Tn + j) * ld + Q + kvh * hd + i];
      }
      s[j] = d / std::sqrt(double(hd));
      mx = std::max(mx, s[j]);
    }
    for (int j = 0; j <= t; ++j) sum += std::exp(s[j] - mx);
    for (int j = 0; j <= t; ++j) P[t * Tn + j] = std::exp(s[j] - mx) / sum;
    (void)KV;
  }
  return P;
}

// Multi-head (NKV = NH) and grouped-query (two query heads per kv head), at
// lengths within one query tile and across several (the last one partial).
TEST(AttentionTest, BackwardMatchesFiniteDifferences) {
  for (const int Tn : {5, 150}) {
    for (const int NKV : {2, 1}) {
      SCOPED_TRACE(::testing::Message() << "T " << Tn << ", NKV " << NKV);
      const int B = 2, NH = 2, hd = 3, Q = NH * hd, KV = NKV * hd, ld = Q + 2 * KV;
      Vec qkv = random_vector(B * Tn * ld, 14), r = random_vector(B * Tn * Q, 15);
      Vec ws(attention_workspace_size(Tn, 64));
      auto run = [&](Vec& out, Vec& lse) {
        attention_forward(out.data(), lse.data(), ws.data(), qkv.data(), qkv.data() + Q,
                          qkv.data() + Q + KV, B, Tn, NH, NKV, hd, ld);
      };
      auto loss = [&] {
        Vec out(B * Tn * Q), lse(B * NH * Tn);
        run(out, lse);
        return dot(out, r);
      };
      Vec out(B * Tn * Q), lse(B * NH * Tn);
      run(out, lse);
      // Each output row is its probabilities times v, causal, as defined.
      double worst = 0;
      for (int b = 0; b < B; ++b) {
        for (int h = 0; h < NH; ++h) {
          const Vec P = reference_probabilities(qkv, b, h, Tn, NH, NKV, hd, ld);
          const int kvh = h / (NH / NKV);
          for (int t = 0; t < Tn; ++t) {
            for (int i = 0; i < hd; ++i) {
              double want = 0;
              for (int j = 0; j <= t; ++j) {
                want += P[t * Tn + j] * qkv[(b * Tn + j) * ld + Q + KV + kvh * hd + i];
              }
              worst = std::max(worst, std::abs(out[(b * Tn + t) * Q + h * hd + i] - want));
            }
          }
        }
      }
      EXPECT_LT(worst, 1e-12);
      // The first token attends only to itself: its log-sum-exp is its own score.
      double self = 0;
      for (int i = 0; i < hd; ++i) self += qkv[i] * qkv[Q + i];
      EXPECT_NEAR(lse[0], self / std::sqrt(double(hd)), 1e-12);
      if (NKV == 1) {
        // Both query heads read the one kv head: head 1 of the first token
        // attends only to itself, so its output is that token's v.
        for (int i = 0; i < hd; ++i) EXPECT_NEAR(out[hd + i], qkv[Q + KV + i], 1e-12);
      }
      Vec dqkv(B * Tn * ld, 0);
      attention_backward(dqkv.data(), dqkv.data() + Q, dqkv.data() + Q + KV, ws.data(), r.data(),
                         lse.data(), qkv.data(), qkv.data() + Q, qkv.data() + Q + KV, B, Tn, NH,
                         NKV, hd, ld);
      expect_gradient_matches("dqkv", qkv, dqkv, loss, /*max_checks=*/200);
    }
  }
}

TEST(SwigluTest, BackwardMatchesFiniteDifferences) {
  const int N = 4, F = 6;
  Vec gu = random_vector(N * 2 * F, 16, 2.0), r = random_vector(N * F, 17);
  auto loss = [&] {
    Vec y(N * F);
    swiglu_forward(y.data(), gu.data(), N, F);
    return dot(y, r);
  };
  Vec y(N * F);
  swiglu_forward(y.data(), gu.data(), N, F);
  EXPECT_NEAR(y[0], gu[0] / (1 + std::exp(-gu[0])) * gu[F], 1e-12);
  Vec dgu(N * 2 * F, 0);
  swiglu_backward(dgu.data(), r.data(), gu.data(), N, F);
  expect_gradient_matches("dgu", gu, dgu, loss);
}

TEST(SoftmaxXentTest, LossAndGradientMatchFiniteDifferences) {
  const int N = 5, V = 7;
  std::vector<int32_t> targets = {3, -1, 0, 6, 2};  // row 1 is padding
  Vec logits = random_vector(N * V, 18, 3.0);
  auto loss = [&] {
    Vec work = logits;
    int64_t predicted = 0;
    return softmax_xent_forward(work.data(), targets.data(), N, V, 0.0, &predicted);
  };
  Vec grad = logits;
  int64_t predicted = 0;
  const double sum = softmax_xent_forward(grad.data(), targets.data(), N, V, 1.0, &predicted);
  EXPECT_EQ(predicted, 4);
  double expected = 0;
  for (int n = 0; n < N; ++n) {
    if (targets[n] < 0) continue;
    double z = 0;
    for (int j = 0; j < V; ++j) z += std::exp(logits[n * V + j]);
    expected += std::log(z) - logits[n * V + targets[n]];
  }
  EXPECT_NEAR(sum, expected, 1e-10);
  for (int j = 0; j < V; ++j) EXPECT_EQ(grad[1 * V + j], 0.0);
  expect_gradient_matches("dlogits", logits, grad, loss);
}

TEST(SoftmaxXentTest, FloatFastExpAgreesWithDouble) {
  const int N = 8, V = 1000;
  std::vector<int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = (n * 37) % V;
  Vec ld = random_vector(N * V, 19, 4.0);
  std::vector<float> lf(ld.begin(), ld.end());
  Vec ldw = ld;
  int64_t p1, p2;
  const double sd = softmax_xent_forward(ldw.data(), targets.data(), N, V, 0.5, &p1);
  const double sf = softmax_xent_forward(lf.data(), targets.data(), N, V, 0.5, &p2);
  EXPECT_NEAR(sf, sd, 1e-5 * std::abs(sd));
  for (int i = 0; i < N * V; ++i) ASSERT_NEAR(lf[i], ldw[i], 1e-6) << i;
}

// --precision bf16's head: the gradient written rounded to bf16 is, bit for
// bit, the fp32 gradient rounded afterwards (padding rows zero), and the loss
// is the same.
TEST(SoftmaxXentTest, TheBf16GradientIsTheFp32GradientRounded) {
  const int N = 6, V = 1031;
  std::vector<int32_t> targets = {5, -1, 0, 1030, 77, 512};
  const Vec l = random_vector(N * V, 21, 5.0);
  std::vector<float> in_place(l.begin(), l.end()), scratch = in_place;
  std::vector<uint16_t> want(N * V), got(N * V, 0xffff);
  int64_t p1 = 0, p2 = 0;
  const double s1 = softmax_xent_forward(in_place.data(), targets.data(), N, V, 0.25, &p1);
  const double s2 =
      softmax_xent_forward(scratch.data(), targets.data(), N, V, 0.25, &p2, got.data());
  to_bf16(want.data(), in_place.data(), N * V);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(p1, p2);
  for (int i = 0; i < N * V; ++i) {
    ASSERT_EQ(got[i], want[i]) << "row " << i / V << " column " << i % V;
  }
  EXPECT_EQ(got[1 * V + 3], 0) << "a padding row's gradient is zero";
  EXPECT_LT(bf16_to_float(got[0 * V + 5]), 0) << "the target's gradient: softmax - 1";
}

TEST(AdamwTest, MatchesClosedFormFirstSteps) {
  // Step 1 with bias correction moves each weight by lr * sign(g) (plus decay).
  AdamWParams hp;
  hp.lr = 0.1f;
  hp.weight_decay = 0.5f;
  std::vector<float> p = {1.0f, -2.0f}, g = {0.3f, -4.0f}, m(2, 0), v(2, 0);
  adamw_update(p.data(), g.data(), m.data(), v.data(), 2, hp, 1);
  EXPECT_NEAR(p[0], 1.0f * (1 - 0.05f) - 0.1f, 1e-6);
  EXPECT_NEAR(p[1], -2.0f * (1 - 0.05f) + 0.1f, 1e-6);
  // Step 2 against a direct double-precision evaluation.
  const double g2 = 0.1;
  g = {static_cast<float>(g2), 0.0f};
  const double m2 = 0.9 * 0.1 * 0.3 + 0.1 * g2, v2 = 0.999 * 0.001 * 0.09 + 0.001 * g2 * g2;
  const double expected =
      p[0] * (1 - 0.05) - 0.1 * (m2 / (1 - 0.81)) / (std::sqrt(v2 / (1 - 0.999 * 0.999)) + 1e-8);
  adamw_update(p.data(), g.data(), m.data(), v.data(), 2, hp, 2);
  EXPECT_NEAR(p[0], expected, 1e-6);
}

TEST(AdamwTest, GlobalNormAndScale) {
  std::vector<float> g(10000);
  double expected = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.5f;
    expected += static_cast<double>(g[i]) * g[i];
  }
  EXPECT_NEAR(global_norm(g.data(), g.size()), std::sqrt(expected), 1e-9 * std::sqrt(expected));
  for (float& x : g) x *= 0.5f;
  EXPECT_NEAR(global_norm(g.data(), g.size()), 0.5 * std::sqrt(expected), 1e-6);
}

// Three AdamW steps on n elements, the gradient scaled by `scale` each step,
// either inside adamw_update (fused) or the way step.cpp did before the scale
// moved into it: a pass of g *= scale over the gradients, then the update.
struct AdamwRun {
  std::vector<float> p, m, v, g;
};
AdamwRun run_adamw(std::size_t n, float scale, bool fused) {
  AdamwRun r{std::vector<float>(n), std::vector<float>(n, 0), std::vector<float>(n, 0),
             std::vector<float>(n)};
  AdamWParams hp;
  hp.lr = 1e-2f;
  hp.weight_decay = 0.1f;
  for (std::size_t i = 0; i < n; ++i) r.p[i] = std::cos(0.11f * static_cast<float>(i));
  for (int64_t t = 1; t <= 3; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      r.g[i] = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(t)) * 3.0f;
    }
    if (fused) {
      const std::vector<float> before = r.g;
      adamw_update(r.p.data(), r.g.data(), r.m.data(), r.v.data(), n, hp, t, scale);
      EXPECT_EQ(r.g, before) << "the gradients are read, not scaled in place";
    } else {
      // The old scale_inplace, verbatim.
#pragma omp parallel for simd schedule(static)
      for (std::size_t i = 0; i < n; ++i) r.g[i] *= scale;
      adamw_update(r.p.data(), r.g.data(), r.m.data(), r.v.data(), n, hp, t);
    }
  }
  return r;
}

void expect_same_update(float scale) {
  const std::size_t n = 1003;  // not a multiple of any vector width: the remainder loop runs
  const AdamwRun fused = run_adamw(n, scale, true), two_pass = run_adamw(n, scale, false);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(fused.p[i], two_pass.p[i]) << "param " << i;
    EXPECT_EQ(fused.m[i], two_pass.m[i]) << "m " << i;
    EXPECT_EQ(fused.v[i], two_pass.v[i]) << "v " << i;
  }
}

// Clipping inside AdamW's pass must not change a bit of training against the
// two passes it replaced: runs are deterministic, and stay reproducible.
TEST(AdamwTest, FusedClipMatchesScaleThenUpdate) { expect_same_update(0.2718f); }
TEST(AdamwTest, FusedScaleOneMatchesUnscaledUpdate) { expect_same_update(1.0f); }

// Ranks on hosts with different core counts use different thread counts;
// the norm decides gradient clipping, so it must not depend on them or the
// replicas drift apart.
TEST(AdamwTest, GlobalNormDoesNotDependOnTheThreadCount) {
  std::vector<float> g(1'000'003);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = std::sin(0.37f * static_cast<float>(i)) * 1e-3f;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = global_norm(g.data(), g.size());
  for (int threads : {2, 3, 5, 8}) {
    omp_set_num_threads(threads);
    EXPECT_EQ(global_norm(g.data(), g.size()), one) << threads << " threads";
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace trainscope::kernels
