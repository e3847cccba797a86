"""The ``programs`` suite: products that stand for what programs run, not what a tuner was shaped on.

Two parts, each with a quarter of its products held out of tuning (``Shape.held_out``; ``bench
--write-shapes`` writes the rest for ``tune --shapes``, and the report shows the held-out products apart):

- a fixed-seed sample of products with M, N and K drawn log-uniform over [1, 2^16] in all four layouts,
  kept only where they fit the caps below (so that the suite runs in minutes on a GPU and every
  operand fits one allocation);
- the products of seven kinds of model other than Llama, each a few layers at the sizes those models
  run: convolutions as GEMM (ResNet-50), attention scores and values, mixture-of-experts experts at
  small token counts, recommender MLPs (DLRM), recurrent cells (LSTM and GRU, DeepBench's sizes), a
  vision transformer (ViT-B/16) and scientific Gram, least-squares and block-Krylov products.

Each product has a kind (``shape_kind``) by its shape alone, so that the report can say where the time
goes: tiny, small, few-column, skinny, deep, gemv-like or large."""

from __future__ import annotations

import numpy as np

from .shapes import LAYOUTS, Shape

#: The sample: how many products, their seed, and the caps a drawn product must meet (multiply-adds, and
#: elements of any one operand).
SAMPLE_SIZE, SAMPLE_SEED = 200, 20261128
MAX_EXPONENT = 16
MAX_MULTIPLY_ADDS = 2**36
MAX_OPERAND_ELEMENTS = 2**27

#: One product of every ``HELD_OUT_EVERY`` of each part is held out of tuning.
HELD_OUT_EVERY = 4


def sampled_products(count: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED) -> list[Shape]:
    """``count`` products, M, N and K log-uniform over [1, 2^MAX_EXPONENT] and the layout uniform, drawn
    again until they meet the caps (which thins out the largest)."""
    rng = np.random.default_rng(seed)
    shapes: list[Shape] = []
    while len(shapes) < count:
        m, n, k = (int(round(2 ** x)) for x in rng.uniform(0, MAX_EXPONENT, 3))
        layout = LAYOUTS[int(rng.integers(len(LAYOUTS)))]
        if m * n * k <= MAX_MULTIPLY_ADDS and max(m * k, k * n, m * n) <= MAX_OPERAND_ELEMENTS:
            shapes.append(Shape(m, n, k, layout, f"sample {len(shapes) + 1}"))
    return shapes


def _layers(model: str, rows: tuple[tuple[str, int, int, int, str], ...]) -> list[Shape]:
    return [Shape(m, n, k, layout, f"{model} {name}") for name, m, n, k, layout in rows]


def model_products() -> list[Shape]:
    """The layers' products of seven kinds of model, forward and, where training runs them, backward."""
    shapes: list[Shape] = []
    # ResNet-50 convolutions as GEMM at batch 8: rows are output pixels (batch x H x W), columns output
    # channels, the reduction input channels x kernel taps; the weight gradient reduces over the pixels.
    shapes += _layers("resnet50", (
        ("conv1 7x7", 8 * 112 * 112, 64, 3 * 49, "NN"), ("res2 1x1", 8 * 56 * 56, 256, 64, "NN"),
        ("res2 3x3", 8 * 56 * 56, 64, 64 * 9, "NN"), ("res3 3x3", 8 * 28 * 28, 128, 128 * 9, "NN"),
        ("res4 3x3", 8 * 14 * 14, 256, 256 * 9, "NN"), ("res5 3x3", 8 * 7 * 7, 512, 512 * 9, "NN"),
        ("res5 1x1", 8 * 7 * 7, 2048, 512, "NN"), ("res4 3x3 dW", 256 * 9, 256, 8 * 14 * 14, "TN"),
        ("res3 3x3 dX", 8 * 28 * 28, 128 * 9, 128, "NT"), ("fc", 8, 1000, 2048, "NT")))
    # Attention of one head: scores Q K^T (sequence x sequence over the head's width), then scores V.
    for seq in (128, 1024, 4096):
        for width in (64, 128):
            shapes += _layers("attention", ((f"QK^T s={seq} d={width}", seq, seq, width, "NT"),
                                            (f"PV s={seq} d={width}", seq, width, seq, "NN")))
    # Mixture-of-experts experts (Mixtral 8x7B: 4096 -> 14336; a fine-grained expert: 2048 -> 1408) on the
    # few tokens routed to each.
    for tokens in (1, 4, 16, 64, 256):
        shapes += _layers("moe", ((f"mixtral up T={tokens}", tokens, 14336, 4096, "NT"),
                                  (f"mixtral down T={tokens}", tokens, 4096, 14336, "NT"),
                                  (f"fine up T={tokens}", tokens, 1408, 2048, "NT")))
    # DLRM's MLPs at batch 2048 (bottom 13-512-256-64, top 479-1024-1024-512-256-1), and their gradients.
    shapes += _layers("dlrm", (
        ("bottom 13->512", 2048, 512, 13, "NT"), ("bottom 512->256", 2048, 256, 512, "NT"),
        ("bottom 256->64", 2048, 64, 256, "NT"), ("top 479->1024", 2048, 1024, 479, "NT"),
        ("top 1024->1024", 2048, 1024, 1024, "NT"), ("top 256->1", 2048, 1, 256, "NT"),
        ("top 1024->1024 dW", 1024, 1024, 2048, "TN"), ("interaction", 27, 27, 64, "NT")))
    # Recurrent cells: all four LSTM gates of [x, h] at once, and DeepBench's GRU products.
    for batch in (1, 16, 64):
        shapes += _layers("rnn", ((f"lstm 1024 B={batch}", batch, 4096, 2048, "NT"),
                                  (f"gru 1760 B={batch}", 5280, batch, 1760, "NN"),
                                  (f"gru 2816 B={batch}", 8448, batch, 2816, "NN")))
    # ViT-B/16 on 8 images of 197 tokens (hidden 768, MLP 3072).
    shapes += _layers("vit", (("qkv", 8 * 197, 2304, 768, "NT"), ("proj", 8 * 197, 768, 768, "NT"),
                              ("mlp up", 8 * 197, 3072, 768, "NT"), ("mlp down", 8 * 197, 768, 3072, "NT"),
                              ("mlp up dW", 3072, 768, 8 * 197, "TN")))
    # Science: Gram matrices of tall-skinny data, least squares' normal equations, block Krylov steps.
    shapes += _layers("science", (
        ("gram 32 x 1e6", 32, 32, 1_000_000, "TN"), ("gram 256 x 1e5", 256, 256, 100_000, "TN"),
        ("normal A^T b 64", 64, 1, 500_000, "TN"), ("lstsq A^T A 512", 512, 512, 20_000, "TN"),
        ("krylov A V 16", 50_000, 16, 2_000, "NN"), ("krylov V^T W 16", 16, 16, 200_000, "TN"),
        ("dense solve update", 4000, 4000, 256, "NN")))
    return shapes


def programs_suite() -> list[Shape]:
    """The sample and the models' products, a quarter of each part marked held out of tuning."""
    parts = (sampled_products(), model_products())
    return [Shape(s.m, s.n, s.k, s.layout, s.name, held_out=i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1)
            for part in parts for i, s in enumerate(part)]


#: The kinds a product is of, in the order the report lists them.
KINDS = ("gemv-like", "tiny", "few-column", "skinny", "deep", "small", "large")


def shape_kind(shape: Shape) -> str:
    """What limits a product, by its shape: 'gemv-like' (M or N is 1), 'tiny' (every side at most 64),
    'few-column' (M or N at most 16), 'skinny' (M or N at most 128, the other side and K larger), 'deep' (K
    at least 16 times M and N: a reduction), 'small' (under 2^30 multiply-adds) or 'large'."""
    m, n, k = shape.m, shape.n, shape.k
    if min(m, n) == 1:
        return "gemv-like"
    if max(m, n, k) <= 64:
        return "tiny"
    if min(m, n) <= 16:
        return "few-column"
    if min(m, n) <= 128 and max(m, n) > 128 and k > 128:
        return "skinny"
    if k >= 16 * max(m, n):
        return "deep"
    return "small" if m * n * k < 2**30 else "large"

