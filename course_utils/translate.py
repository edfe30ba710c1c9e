"""Translating text: raw sentences in, `Translation`s out, on top of the decoding algorithms of `search`.

    translation = translate(model, src_vocab, tgt_vocab, "Je suis très fatigué.")     # greedy; beam_width=5
    translation.text, translation.output_tokens, translation.attention                 # (T, S) attention
    translate_batch(model, src_vocab, tgt_vocab, sentences)                            # many, batched greedy
    translate_sources(model, tgt_vocab, [prepare_source(src_vocab, s) for s in sentences])   # the same, in two steps
    translate_forced(model, src_vocab, tgt_vocab, sentence, "i m very tired .")        # a given output, scored
    translate(..., replace_unknown=True)                                               # <unk> -> source word

    prepare_source     normalise a sentence like the corpus -> Source(words, ids with EOS, unknown); refuse empty input
    replace_unknown_words   each output <unk> replaced by the source word its attention row weights most
    attention_table    the (T, S) attention as plain text (the command line's --show-attention)

Introduced in notebook 06 (translate, Translation) and notebook 07 (unknown-word replacement).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from course_utils.data import length_batches, normalize_string, pad_ids
from course_utils.search import beam_search, force_decode, greedy_decode
from course_utils.vocab import EOS_TOKEN, UNK_ID, UNK_TOKEN

__all__ = ["Translation", "Source", "prepare_source", "clip_text", "source_warnings", "replace_unknown_words",
           "copyable_positions", "translate", "translate_forced", "translate_batch", "translate_sources",
           "attention_table"]


class Translation(NamedTuple):
    """One translated sentence, ready to print or plot.

    source_tokens: the normalised source words plus "<eos>" (unknown words kept as typed; the model saw "<unk>").
    output_tokens: the output words, ending with "<eos>" when the model produced it.
    attention:     (T, S) with T = len(output_tokens), S = len(source_tokens); None without attention.
    score:         log-probability of the output (greedy) or the hypothesis' length-normalised score (beam).
    unknown_words: source words missing from the vocabulary (they were fed as "<unk>").
    replacements:  (output position t, source position j) of each "<unk>" replaced by source word j
                   (`replace_unknown_words`); empty otherwise.

    Introduced in notebook 06.
    """

    source_tokens: list[str]
    output_tokens: list[str]
    attention: Tensor | None
    score: float
    unknown_words: list[str]
    replacements: tuple[tuple[int, int], ...] = ()

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
    """Normalise a raw sentence and turn it into ids; refuse input the model cannot translate.

    Args:
        src_vocab: the source `Vocab`.
        sentence: raw text, e.g. "Je suis très fatigué."
    Returns:
        Source(words, ids with EOS appended, unknown words): the one text path of translation (the command line
        checks its lines with it too, then translates what it prepared with `translate_sources`).
    Raises:
        ValueError: the sentence is empty after normalisation, or every word is unknown.

    Introduced in notebook 06.
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    normalised = normalize_string(sentence)
    words = normalised.split()
    if not words:
        raise ValueError(f"nothing to translate in {clip_text(repr(sentence))}: it is empty after normalisation; "
                         "type a sentence such as 'je suis fatigue .'")
    ids = src_vocab.encode(normalised, add_eos=True)
    unknown = [word for word, index in zip(words, ids) if index == UNK_ID]
    if len(unknown) == len(words):  # the words are named once, clipped: a 10,000-letter token stays one line
        raise ValueError(f"every word is unknown to this model's vocabulary ({clip_text(', '.join(unknown))}); "
                         "the model was trained on French sentences such as 'je suis fatigue .'; check the "
                         "language direction and spelling")
    return Source(words, ids, unknown)


def clip_text(text: str, limit: int = 60) -> str:
    """`text` cut to at most `limit` characters, with the total length said when cut (for error messages)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def source_warnings(words: Sequence[str], unknown: Sequence[str]) -> list[str]:
    """What to tell the user about a translatable source (words and unknown words from `prepare_source`).

    Unknown words (clipped: a pasted 10,000-letter token is named once, briefly) and a source with no word at
    all, only punctuation, which the model translates into a guess.
    """
    warnings = []
    if unknown:
        warnings.append(f"unknown words fed as <unk>: {clip_text(', '.join(unknown))}")
    if not any(character.isalpha() for word in words for character in word):
        warnings.append(f"only punctuation ({clip_text(' '.join(words))}), no word to translate; the output is "
                        "a guess")
    return warnings


def replace_unknown_words(translation: Translation) -> Translation:
    """The "rare word" trick (Luong et al. 2015, Jean et al. 2015): attention as an alignment.

    Every output "<unk>" is replaced by the source word its attention row weights most. Only words can be copied:
    the source "<eos>" and punctuation (tokens without a letter or digit) are left out of the argmax, unless the
    source has no word at all. Names, numbers and rare words the model cannot spell are then copied from the
    source, which is right when the word is spelt the same in both languages. `replacements` records each
    (output position t, source position j); the attention and score are unchanged.

    Raises:
        ValueError: the translation has no attention (a model without attention aligns nothing).

    Introduced in notebook 07.
    """
    if UNK_TOKEN not in translation.output_tokens:
        return translation
    if translation.attention is None:
        raise ValueError("this model has no attention, so an output <unk> cannot be aligned with a source word; "
                         "translate without replacing unknown words, or use a model with attention")
    words = copyable_positions(translation.source_tokens)
    aligned = translation.attention[:, words].argmax(dim=-1).tolist()  # (T, S') -> (T,) best of the words
    output_tokens, replacements = list(translation.output_tokens), []
    for t, token in enumerate(translation.output_tokens):
        if token == UNK_TOKEN:
            j = words[aligned[t]]
            output_tokens[t] = translation.source_tokens[j]
            replacements.append((t, j))
    return translation._replace(output_tokens=output_tokens, replacements=tuple(replacements))


def copyable_positions(source_tokens: Sequence[str]) -> list[int]:
    """The source positions `replace_unknown_words` may copy from: the words (a letter or digit in them), without
    the final "<eos>"; every position but "<eos>" when there is no word. Introduced in notebook 07.
    """
    positions = list(range(len(source_tokens) - 1))  # the last token is <eos>
    words = [j for j in positions if any(character.isalnum() for character in source_tokens[j])]
    return words or positions


def _to_translation(words, unknown, tgt_vocab, output_ids: list[int], attention: Tensor | None,
                    score: float) -> Translation:
    output_tokens = [tgt_vocab.index2word[i] for i in output_ids]
    return Translation(words + [EOS_TOKEN], output_tokens, attention, score, unknown)


def translate(model, src_vocab, tgt_vocab, sentence: str, beam_width: int = 1, max_steps: int | None = None,
              replace_unknown: bool = False) -> Translation:
    """Translate one raw sentence (normalised like the corpus first).

    Args:
        model: a trained `Seq2Seq`.
        src_vocab, tgt_vocab: the vocabularies the model was trained with.
        sentence: raw text, any length.
        beam_width: 1 = greedy decoding, k > 1 = beam search (best hypothesis).
        max_steps: output cap (EOS included); None derives it from the source length.
        replace_unknown: replace each output <unk> by its most attended source word (`replace_unknown_words`).
    Returns:
        Translation(source_tokens, output_tokens, attention (T, S) or None, score, unknown_words, replacements).
    Raises:
        ValueError: empty or only-unknown input (message names the words).

    Introduced in notebook 06.
    """
    return translate_batch(model, src_vocab, tgt_vocab, [sentence], beam_width=beam_width, max_steps=max_steps,
                           replace_unknown=replace_unknown)[0]


@torch.no_grad()
def translate_forced(model, src_vocab, tgt_vocab, sentence: str, output: str) -> Translation:
    """A given output (a reference, or any sentence typed by hand) force-decoded as a Translation.

    Both sides are normalised like the corpus; `output` gets EOS appended, unknown target words become <unk>.
    The Translation's attention (T, S) is where the model looks while it is made to produce `output`, and its
    score is log P(output | sentence). Viz functions draw it like any other translation. Introduced in notebook 06.
    """
    words, src_ids, unknown = prepare_source(src_vocab, sentence)
    output_ids = tgt_vocab.encode(normalize_string(output), add_eos=True)
    if len(output_ids) == 1:
        raise ValueError(f"the output {output!r} is empty after normalisation; pass the sentence to force-decode")
    forced = force_decode(model, torch.tensor(src_ids), torch.tensor(output_ids))  # log_probs (T, V)
    log_prob = forced.log_probs.gather(1, torch.tensor(output_ids).unsqueeze(1)).sum()  # log P(output | source)
    return _to_translation(words, unknown, tgt_vocab, output_ids, forced.attention, float(log_prob))


def translate_batch(model, src_vocab, tgt_vocab, sentences: Sequence[str], beam_width: int = 1,
                    batch_size: int = 64, max_steps: int | None = None,
                    replace_unknown: bool = False) -> list[Translation]:
    """Translate many raw sentences; greedy decoding runs in batches of similar length, results keep input order.

    Args:
        model, src_vocab, tgt_vocab: as for `translate`.
        sentences: raw sentences (each must be translatable; see `prepare_source`).
        beam_width: 1 = batched greedy; k > 1 = beam search one sentence at a time.
        batch_size: sentences per greedy batch.
        max_steps: output cap (EOS included); None derives one per sentence.
        replace_unknown: replace each output <unk> by its most attended source word (`replace_unknown_words`).
    Returns:
        one `Translation` per sentence, in input order.

    Introduced in notebook 06.
    """
    results = translate_sources(model, tgt_vocab, [prepare_source(src_vocab, sentence) for sentence in sentences],
                                beam_width=beam_width, batch_size=batch_size, max_steps=max_steps)
    return [replace_unknown_words(result) for result in results] if replace_unknown else results


def translate_sources(model, tgt_vocab, prepared: Sequence[Source], beam_width: int = 1, batch_size: int = 64,
                      max_steps: int | None = None) -> list[Translation]:
    """The decoding half of `translate_batch`: sentences already made ready by `prepare_source` -> one
    `Translation` per sentence, in input order (greedy in batches of similar length, or beam search one by one).
    Introduced in notebook 06."""
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
                attention = None
                if output.attention is not None:
                    attention = output.attention[row, :length, :len(ids)].cpu()  # (T, S)
                results[i] = _to_translation(words, unknown, tgt_vocab, output.tokens[row, :length].tolist(),
                                             attention, float(output.log_prob[row]))
    return results


def attention_table(translation: Translation, digits: int = 2) -> str:
    """The attention matrix of a Translation as plain text: one row per output token, one column per source token.

    Returns a message instead when the model has no attention. Introduced in notebook 05.
    """
    if translation.attention is None:
        return "(this model has no attention: nothing to show)"
    weights = translation.attention.tolist()  # T rows of S floats
    width = max(digits + 2, *(len(token) for token in translation.source_tokens))
    row_label = max(len(token) for token in translation.output_tokens)
    lines = [" " * row_label + " " + " ".join(f"{token:>{width}}" for token in translation.source_tokens)]
    for token, row in zip(translation.output_tokens, weights):
        lines.append(f"{token:>{row_label}} " + " ".join(f"{value:>{width}.{digits}f}" for value in row))
    return "\n".join(lines)
