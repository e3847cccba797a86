"""The suites shipped with autogemm (``autogemm bench --suite NAME``): the standard one of squares, odd
sizes and skinny products; the linear layers of two language models; and ``programs`` (from the module of that name):
products that stand for what programs run, a part of them held out of tuning."""

from __future__ import annotations

from .programs import programs_suite
from .shapes import Shape

#: The suite (``autogemm bench --suite``): square powers of two, sizes that are not multiples of any tile,
#: and skinny or deep products, each in three layouts.
SUITE_SQUARES = (256, 512, 1024, 2048, 4096, 8192)
SUITE_ODD = (1000, 1023, 1025, 3000, 4097)
SUITE_SKINNY = ((8192, 64, 8192), (64, 8192, 8192), (4096, 4096, 64), (128, 128, 65536))
SUITE_LAYOUTS = ("NN", "NT", "TN")


def suite() -> list[Shape]:
    sizes = [(s, s, s) for s in SUITE_SQUARES + SUITE_ODD] + list(SUITE_SKINNY)
    return [Shape(m, n, k, layout) for m, n, k in sizes for layout in SUITE_LAYOUTS]


#: The linear layers of a Llama-3-8B class model (hidden 4096, keys and values 1024, MLP 14336, vocabulary
#: 128256) and of BERT-large (hidden 1024, MLP 4096): (name, outputs, inputs) of each distinct weight.
LLAMA_LAYERS = (("q_proj", 4096, 4096), ("kv_proj", 1024, 4096), ("up_proj", 14336, 4096),
                ("down_proj", 4096, 14336), ("lm_head", 128256, 4096))
BERT_LAYERS = (("bert_attn", 1024, 1024), ("bert_up", 4096, 1024), ("bert_down", 1024, 4096))
LLAMA_TOKENS = (1, 8, 32, 128, 512, 2048, 8192)
BERT_TOKENS = (128, 2048)


def llm_suite() -> list[Shape]:
    """The products of those layers at each number of tokens T: the forward product y = x W^T (x of T x
    inputs, W of outputs x inputs: layout NT) and the weight gradient dW = dy^T x (outputs x inputs, a
    reduction over T: layout TN)."""
    shapes = []
    for layers, tokens in ((LLAMA_LAYERS, LLAMA_TOKENS), (BERT_LAYERS, BERT_TOKENS)):
        for t in tokens:
            for name, outputs, inputs in layers:
                shapes.append(Shape(t, outputs, inputs, "NT", f"{name} T={t}"))
                shapes.append(Shape(outputs, inputs, t, "TN", f"{name} dW T={t}"))
    return shapes


#: ``autogemm bench --suite NAME``: the problems of each suite shipped.
SUITES = {"standard": suite, "llm": llm_suite, "programs": programs_suite}
