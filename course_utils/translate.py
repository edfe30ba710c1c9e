"""Translating text: raw sentences in, `Translation`s out, on top of the decoding algorithms of `search`.
Introduced in notebook 06 (translate, Translation) and notebook 07 (unknown-word replacement)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from course_utils.data import length_batches, normalize_string, pad_ids
from course_utils.search import beam_search, force_decode, greedy_decode
from course_utils.vocab import EOS_TOKEN, UNK_ID, UNK_TOKEN

__all__ = ["Translation", "Source", "prepare_source", "clip_text", "replace_unknown_words", "copyable_positions",
           "translate", "translate_forced", "translate_batch", "translate_sources"]


class Translation(NamedTuple):
    """One translated sentence, ready to print or plot. Introduced in notebook 06."""

    source_tokens: list[str]  # normalised source words (unknown ones as typed; the model saw <unk>) plus "<eos>"
    output_tokens: list[str]  # output words, ending with "<eos>" when the model produced it
    attention: Tensor | None  # (T, S), T = len(output_tokens), S = len(source_tokens); None without attention
    score: float  # log-probability of the output (greedy, forced) or the length-normalised score (beam)
    unknown_words: list[str]  # source words missing from the vocabulary
    replacements: tuple[tuple[int, int], ...] = ()  # (t, j): output <unk> t replaced by source word j

    @property
    def text(self) -> str:
        """The output words joined by spaces, without "<eos>"."""
        return " ".join(token for token in self.output_tokens if token != EOS_TOKEN)


class Source(NamedTuple):
    """A raw sentence made ready for the model by `prepare_source`. Introduced in notebook 06."""

    words: list[str]  # the normalised words (unknown ones as typed)
    ids: list[int]  # their ids, EOS appended (unknown words -> UNK_ID)
    unknown: list[str]  # the words missing from the vocabulary


def prepare_source(src_vocab, sentence: str) -> Source:
    """Normalise a raw sentence like the corpus and turn it into ids, EOS appended. Introduced in notebook 09.

    Raises TypeError for a non-str, ValueError when nothing is left after normalisation or every word is unknown."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    normalised = normalize_string(sentence)
    words = normalised.split()
    if not words:
        raise ValueError(f"nothing to translate in {clip_text(repr(sentence))}: it is empty after normalisation; "
                         "type a sentence such as 'je suis fatigue .'")
    ids = src_vocab.encode(normalised, add_eos=True)
    unknown = [word for word, index in zip(words, ids) if index == UNK_ID]
    if len(unknown) == len(words):
        raise ValueError(f"every word is unknown to this model's vocabulary ({clip_text(', '.join(unknown))}); "
                         "the model was trained on French sentences such as 'je suis fatigue .'; check the "
                         "language direction and spelling")
    return Source(words, ids, unknown)


def clip_text(text: str, limit: int = 60) -> str:
    """`text` cut to at most `limit` characters, with the total length said when cut (for error messages)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def replace_unknown_words(translation: Translation) -> Translation:
    """Replace every output "<unk>" by the source word (of `copyable_positions`) its attention row weights most.

    Records each (t, j) in `replacements`; raises ValueError without attention. Introduced in notebook 07."""
    if UNK_TOKEN not in translation.output_tokens:
        return translation
    if translation.attention is None:
        raise ValueError("this model has no attention, so an output <unk> cannot be aligned with a source word; "
                         "translate without replacing unknown words, or use a model with attention")
    words = copyable_positions(translation.source_tokens)
    aligned = translation.attention[:, words].argmax(dim=-1).tolist()  # (T, S') -> (T,) best of the words
    copied = {t: words[aligned[t]] for t, token in enumerate(translation.output_tokens) if token == UNK_TOKEN}
    output_tokens = [translation.source_tokens[copied[t]] if t in copied else token
                     for t, token in enumerate(translation.output_tokens)]
    return translation._replace(output_tokens=output_tokens, replacements=tuple(copied.items()))


def copyable_positions(source_tokens: Sequence[str]) -> list[int]:
    """Positions `replace_unknown_words` may copy from: tokens with a letter or digit, never the final "<eos>";
    every position but "<eos>" when there is no such token. Introduced in notebook 07."""
    positions = list(range(len(source_tokens) - 1))  # the last token is <eos>
    words = [j for j in positions if any(character.isalnum() for character in source_tokens[j])]
    return words or positions


def _to_translation(words, unknown, tgt_vocab, output_ids: list[int], attention: Tensor | None,
                    score: float) -> Translation:
    return Translation(words + [EOS_TOKEN], [tgt_vocab.index2word[i] for i in output_ids], attention, score, unknown)


def translate(model, src_vocab, tgt_vocab, sentence: str, beam_width: int = 1, max_steps: int | None = None,
              replace_unknown: bool = False) -> Translation:
    """Translate one raw sentence: greedy (beam_width=1) or the best beam-search hypothesis. Introduced in notebook 06.

    max_steps None: the cap of `search.default_max_steps`. Raises ValueError for input `prepare_source` refuses."""
    return translate_batch(model, src_vocab, tgt_vocab, [sentence], beam_width=beam_width, max_steps=max_steps,
                           replace_unknown=replace_unknown)[0]


@torch.no_grad()
def translate_forced(model, src_vocab, tgt_vocab, sentence: str, output: str) -> Translation:
    """A given output (a reference, or a sentence typed by hand) force-decoded as a Translation, EOS appended.

    Its attention (T, S) is where the model looks while made to produce it; score is log P(output | sentence).
    Introduced in notebook 06."""
    words, src_ids, unknown = prepare_source(src_vocab, sentence)
    output_ids = tgt_vocab.encode(normalize_string(output), add_eos=True)
    if len(output_ids) == 1:
        raise ValueError(f"the output {output!r} is empty after normalisation; pass the sentence to force-decode")
    forced = force_decode(model, torch.tensor(src_ids), torch.tensor(output_ids))  # log_probs (T, V)
    log_prob = forced.log_probs.gather(1, torch.tensor(output_ids).unsqueeze(1)).sum()  # log P(output | source)
    return _to_translation(words, unknown, tgt_vocab, output_ids, forced.attention, float(log_prob))


def translate_batch(model, src_vocab, tgt_vocab, sentences: Sequence[str], beam_width: int = 1, batch_size: int = 64,
                    max_steps: int | None = None, replace_unknown: bool = False) -> list[Translation]:
    """`translate` for many raw sentences, in input order (greedy runs in batches of similar length; beam search
    one sentence at a time). Introduced in notebook 06."""
    results = translate_sources(model, tgt_vocab, [prepare_source(src_vocab, sentence) for sentence in sentences],
                                beam_width=beam_width, batch_size=batch_size, max_steps=max_steps)
    return [replace_unknown_words(result) for result in results] if replace_unknown else results


def translate_sources(model, tgt_vocab, prepared: Sequence[Source], beam_width: int = 1, batch_size: int = 64,
                      max_steps: int | None = None) -> list[Translation]:
    """`translate_batch`'s decoding half, for sentences made ready by `prepare_source`. Introduced in notebook 06."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    results: list[Translation | None] = [None] * len(prepared)
    if beam_width > 1:
        for i, (words, ids, unknown) in enumerate(prepared):
            best = beam_search(model, torch.tensor(ids), beam_width=beam_width, max_steps=max_steps)[0]
            results[i] = _to_translation(words, unknown, tgt_vocab, best.tokens, best.attention, best.score)
    else:
        for chunk in length_batches([len(ids) for _, ids, _ in prepared], batch_size):
            src, src_lengths = pad_ids([torch.tensor(prepared[i][1]) for i in chunk])  # (B, S), (B,)
            output = greedy_decode(model, src.to(model.device), src_lengths, max_steps=max_steps)
            for row, i in enumerate(chunk):
                words, ids, unknown = prepared[i]
                length = int(output.lengths[row])
                attention = None if output.attention is None else output.attention[row, :length, :len(ids)].cpu()
                results[i] = _to_translation(words, unknown, tgt_vocab, output.tokens[row, :length].tolist(),
                                             attention, float(output.log_prob[row]))
    return results
