"""How long the attention explorer takes to redraw on the CPU, for a 10-word sentence (the aim: well under 0.5 s).

    .venv/bin/python benchmarks/explorer_redraw.py                      # lecture-size random model (no training)
    .venv/bin/python benchmarks/explorer_redraw.py --recipe lecture-bahdanau   # a cached trained model

Three numbers, medians over repeats:
  step redraw   moving the slider: state lookup + figure + PNG (the translation is cached)
  full redraw   typing a new sentence: translate + force-decode + figure + PNG
  draw only     figure + PNG of a synthetic 11 x 11 state (what a trained model's 10-word sentence gives)
A random model does not learn to stop, so its outputs run to the length cap (T = 2 S + 5): the step redraw it
reports is for that longer map, an upper bound for a trained model's.
"""
from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from course_utils.explorer import AttentionExplorer, ExplorerState, draw_state, figure_png  # noqa: E402
from course_utils.seq2seq import ModelConfig, Seq2Seq  # noqa: E402
from course_utils.vocab import Vocab  # noqa: E402

SENTENCE = "je suis tres content de te voir aujourd hui ."  # 10 words
OTHER = "nous sommes tres fatigues ce soir ."


def random_lecture_model(src_words: int = 4500, tgt_words: int = 2900) -> SimpleNamespace:
    """A lecture-size (256 hidden) Bahdanau model with vocabularies of the course's size, randomly initialised."""
    torch.manual_seed(0)
    words = (SENTENCE + " " + OTHER).split()
    src_vocab = Vocab.build([" ".join(words + [f"fr{i}" for i in range(src_words - len(set(words)))])])
    tgt_vocab = Vocab.build(["i am very happy to see you today ."] + [f"en{i}" for i in range(tgt_words)])
    model = Seq2Seq(ModelConfig(len(src_vocab), len(tgt_vocab), attention="bahdanau")).eval()
    return SimpleNamespace(model=model, src_vocab=src_vocab, tgt_vocab=tgt_vocab)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", help="use load_or_train(RECIPE) instead of a random model")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.recipe:
        from course_utils.runtime import fast_mode
        from course_utils.zoo import load_or_train

        trained = load_or_train(args.recipe, fast=fast_mode(), log=None)
    else:
        trained = random_lecture_model()
    ui = AttentionExplorer({"model": trained}, sentence=SENTENCE)
    state = ui.state()
    steps = []
    for _ in range(args.repeats):
        for value in range(1, state.num_steps + 1):
            ui.step.value = value
            steps.append(ui.last_redraw_seconds)
    full = []
    for _ in range(args.repeats):
        for text in (OTHER, SENTENCE):
            started = time.perf_counter()
            ui.text.value = text
            full.append(time.perf_counter() - started)
    tokens = SENTENCE.split() + ["<eos>"]
    synthetic = ExplorerState(source_tokens=tokens, output_tokens=tokens, attention=np.eye(11), step=4,
                              tokens_so_far=tokens[:4], chosen=tokens[4], weights_row=np.eye(11)[4],
                              top_k=[(t, 0.2) for t in tokens[:5]])
    draw = []
    for _ in range(5 * args.repeats):
        started = time.perf_counter()
        figure_png(draw_state(synthetic))
        draw.append(time.perf_counter() - started)
    print(f"model: {args.recipe or 'random lecture-size bahdanau (256 hidden)'}; torch threads "
          f"{torch.get_num_threads()}; sentence S={len(state.source_tokens)} tokens, output T={state.num_steps}")
    print(f"step redraw (slider), T={state.num_steps}: median {statistics.median(steps):.3f} s, "
          f"max {max(steps):.3f} s over {len(steps)}")
    print(f"full redraw (new sentence): median {statistics.median(full):.3f} s, max {max(full):.3f} s")
    print(f"draw only, 11 x 11 state:   median {statistics.median(draw):.3f} s, max {max(draw):.3f} s")


if __name__ == "__main__":
    main()
