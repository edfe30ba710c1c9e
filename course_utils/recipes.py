"""Recipes: named, commented ways to build and train a model: a ModelConfig template (vocabulary sizes filled from
the data) and a TrainConfig, tuned on the dev split (benchmarks/README.md); course_utils.zoo trains and caches them.
Introduced in notebook 04."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from course_utils.seq2seq import ModelConfig
from course_utils.train import TrainConfig
from course_utils.transformer import TransformerConfig
from course_utils.vocab import Vocab

__all__ = ["Recipe", "RECIPES", "DEFAULT_RECIPE", "get_recipe"]


@dataclass(frozen=True)
class Recipe:
    """A named way to build and train a model (beam_width: for its test scores). Introduced in notebook 04."""
    name: str
    model: ModelConfig | TransformerConfig
    train: TrainConfig
    beam_width: int = 1

    def model_config(self, src_vocab: Vocab, tgt_vocab: Vocab) -> ModelConfig | TransformerConfig:
        """The model config for these vocabularies."""
        return dataclasses.replace(self.model, src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))

    def train_config(self, **overrides) -> TrainConfig:
        """The TrainConfig of this recipe; keyword arguments override fields (e.g. device="cpu")."""
        return dataclasses.replace(self.train, **overrides)

    def with_model(self, name: str | None = None, **fields) -> Recipe:
        """A variant with ModelConfig fields replaced (and, optionally, a new name)."""
        return dataclasses.replace(self, name=name or self.name, model=dataclasses.replace(self.model, **fields))

    def with_training(self, name: str | None = None, **fields) -> Recipe:
        """A variant with TrainConfig fields replaced (and, optionally, a new name)."""
        return dataclasses.replace(self, name=name or self.name, train=dataclasses.replace(self.train, **fields))


# The lecture recipe: trains live in class on a 2-core CPU (dev BLEU differences below: 3 seeds each).
_LECTURE_MODEL = ModelConfig(
    embedding_size=128,  # small embeddings: the vocabulary has only ~4,000 French / 2,600 English words
    hidden_size=256,  # the classic tutorial's size, so the comparison is fair
    dropout=0.1)  # little regularisation: ten epochs barely overfit (0.2: -2.7 dev BLEU; 0.0: +0.6, within noise)
_LECTURE_TRAINING = TrainConfig(
    epochs=10,  # 10 x 8,750 pairs (8 or 6 epochs at higher learning rates lost 3-7 dev BLEU)
    batch_size=128,  # large matrix products; 96 learns more per epoch (+3.4 dev BLEU at 3e-3) but runs 1.2x slower
    bucket_by="source",  # batches of similar source length: +2 dev BLEU over target-length buckets (3 seeds)
    learning_rate=6e-3,  # Adam; large steps early (3e-3: -6.8 dev BLEU; 8e-3: -1.5; 1e-2: -2.9)...
    lr_decay=0.85,  # ...smaller ones late (0.85 ** 9 = 0.23)
    label_smoothing=0.1,  # +0.8 dev BLEU; the dev loss and perplexity stay the plain NLL
    time_budget=None)  # the same 10 epochs everywhere (reproducible); with_training(time_budget=110) ends on time

# The strongest model of the course: bidirectional encoder, regularised, under 10 minutes on a 2-core CPU.
_FULL_MODEL = ModelConfig(
    attention="bahdanau",
    bidirectional=True,  # read the French sentence both ways; keys become 2H wide, a bridge maps to H
    embedding_size=256,  # 128 lost ~0.7 BLEU
    hidden_size=256,  # 384 and 512 learn more per epoch but fit fewer epochs into the time budget
    dropout=0.25)  # +0.8 dev BLEU over 0.3 (2 seeds); 0.35 and 0.4 worse
_FULL_TRAINING = TrainConfig(
    label_smoothing=0.2,  # +0.6 BLEU with beam search over no smoothing; 0.1 and 0.3 slightly worse
    epochs=26,  # dev BLEU flattens after ~20 epochs; the time budget may stop it a little earlier (18: -1.7 dev BLEU)
    batch_size=64,  # 32 and 48 were slower per epoch and no better
    bucket_by="source",  # as the lecture recipe (+0.0 dev BLEU here, 2 seeds: kept for one policy)
    learning_rate=2e-3,  # 3e-3 and 1.5e-3 were worse on dev (2 seeds each)
    lr_decay=0.9,  # 0.9 ** 25 = 0.07: the last epochs take small steps...
    average_last=5,  # ...and their weights are averaged (checkpoint averaging)
    time_budget=540.0)  # stop under 10 minutes of training even on a slow machine

# Notebook 09's pre-LN Transformer, about the lecture GRU's CPU time; tuned with benchmarks/transformer_vs_gru.py.
_TRANSFORMER_MODEL = TransformerConfig(
    hidden_size=128,  # H = d_model; 256 (4.3M parameters) took twice the CPU time for -0.7 dev BLEU; 192: -2.0
    heads=4,  # Dh = 32 per head (8 heads at H=256: -0.3 dev BLEU, within noise)
    layers=2,  # two encoder and two decoder layers (one layer: -4.3 dev BLEU; three: +0.3 for 1.2x the time)
    ff_size=256,  # feed-forward width 2H (4H at H=256: -0.6 dev BLEU)
    dropout=0.1)  # 0.2: -4.1 dev BLEU in ten epochs
_TRANSFORMER_TRAINING = dataclasses.replace(_LECTURE_TRAINING,
    learning_rate=2e-3,  # pre-LN trains without a warm-up; 5e-4: -10.5 dev BLEU (at H=256)
    lr_decay=0.9,  # +1.4 dev BLEU over 0.85 (at H=256)
    cuda_graphs=False)  # the recorded graphs are the GRU decoder's step loop; a Transformer has none
_FULL_TRANSFORMER_MODEL = dataclasses.replace(_TRANSFORMER_MODEL, hidden_size=256, ff_size=512)  # untuned
_FULL_TRANSFORMER_TRAINING = dataclasses.replace(_FULL_TRAINING, cuda_graphs=False)


def _lecture(attention: str, prefix: str = "lecture") -> Recipe:
    return Recipe(f"{prefix}-{attention}", dataclasses.replace(_LECTURE_MODEL, attention=attention), _LECTURE_TRAINING)


RECIPES: dict[str, Recipe] = {recipe.name: recipe for recipe in [
    _lecture("bahdanau"),  # the default: additive attention (notebooks 03-06)
    _lecture("scaled_dot"),  # Luong dot divided by sqrt(K): no parameters in the scorer
    _lecture("scaled_general"),  # Luong general divided by sqrt(K): q^T W k / sqrt(K)
    _lecture("concat"),  # Luong concat: v^T tanh(W [q; k])
    _lecture("none"),  # no attention: the encoder's final state is all the decoder gets
    # Exhibits (notebook 04): unscaled Luong scores saturate the softmax at K = 256; some seeds never recover
    Recipe("exhibit-dot-unscaled", dataclasses.replace(_LECTURE_MODEL, attention="dot"), _LECTURE_TRAINING),
    Recipe("exhibit-general-unscaled", dataclasses.replace(_LECTURE_MODEL, attention="general"), _LECTURE_TRAINING),
    Recipe("full-bahdanau", _FULL_MODEL, _FULL_TRAINING, beam_width=5),  # +2.5 BLEU over greedy; 10: no better
    Recipe("lecture-transformer", _TRANSFORMER_MODEL, _TRANSFORMER_TRAINING),  # notebook 09
    Recipe("full-transformer", _FULL_TRANSFORMER_MODEL, _FULL_TRANSFORMER_TRAINING, beam_width=5),
]}
DEFAULT_RECIPE = "lecture-bahdanau"


def get_recipe(name: str) -> Recipe:
    """The recipe called `name`, with a clear error listing the known names. Introduced in notebook 07."""
    if name not in RECIPES:
        raise KeyError(f"no recipe called {name!r}; known recipes: {', '.join(RECIPES)}")
    return RECIPES[name]
