"""`translate` without a sentence: standard input, exactly one output line per input line, split on b"\n" only (so
U+2028, \x0b, \x85 ... stay inside their line). A line that is not UTF-8, is empty or cannot be translated (alone: a
failing batch is retried line by line) costs only its own output line, written empty, with a warning naming it.
Also the text that both ways of translating print: warnings about a source, and the attention as a table.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import IO, NamedTuple

from course_utils.data import length_batches
from course_utils.translate import (
    Source,
    Translation,
    clip_text,
    prepare_source,
    replace_unknown_words,
    translate_sources,
)

__all__ = ["translate_stream", "source_warnings", "attention_table"]

_Warn = Callable[[str], None]


def _warn_on_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


class _SourceLine(NamedTuple):
    """One input line: its 1-based number and its prepared source (None: nothing to translate)."""
    number: int
    source: Source | None


def _read_lines(stream: IO) -> list[bytes]:
    """All of `stream` as byte lines, split on b"\\n" only; a text stream is encoded back losslessly."""
    data = stream.read()
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # "a\nb\n" is two lines, "" none
    return lines


def _check_lines(raw_lines: Sequence[bytes], src_vocab, warn: _Warn) -> list[_SourceLine]:
    """Decode (UTF-8, a trailing "\\r" dropped) and prepare each line; warn, naming the line, about lines that
    will be written empty and about unknown words."""
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        raw, source = raw.removesuffix(b"\r"), None
        try:
            text = raw.decode("utf-8")
            problem = None if text.strip() else f"line {number} is empty"
            source = None if problem else prepare_source(src_vocab, text)
        except UnicodeDecodeError as error:
            problem = f"line {number} is not valid UTF-8 (byte {raw[error.start]:#04x} at position {error.start})"
        except ValueError as error:
            problem = f"line {number}: {error}"
        if problem:
            warn(f"{problem}; wrote an empty line")
        else:
            for message in source_warnings(source.words, source.unknown):
                warn(f"line {number}: {message}")
        lines.append(_SourceLine(number, source))
    return lines


def _translate_lines(trained, lines: Sequence[_SourceLine], beam_width: int = 1, batch_size: int = 64,
                    warn: _Warn = _warn_on_stderr, replace_unknown: bool = False) -> list[str]:
    """One output per line, in order ("" where there was no text or translation failed); `trained` has .model,
    .src_vocab and .tgt_vocab. Lines of similar length are batched, `batch_size` at a time."""
    if batch_size < 1 or beam_width < 1:
        raise ValueError(f"batch_size and beam_width must be >= 1, got {batch_size} and {beam_width}")
    outputs = [""] * len(lines)
    todo = [index for index, line in enumerate(lines) if line.source is not None]
    for batch in length_batches([len(lines[index].source.words) for index in todo], batch_size):
        chunk = [todo[position] for position in batch]
        try:
            results = translate_sources(trained.model, trained.tgt_vocab, [lines[i].source for i in chunk],
                                        beam_width=beam_width, batch_size=len(chunk))
        except (ValueError, RuntimeError):  # line by line: only the line at fault is lost
            results = []
            for i in chunk:
                try:
                    results.append(translate_sources(trained.model, trained.tgt_vocab, [lines[i].source],
                                                     beam_width=beam_width, batch_size=1)[0])
                except (ValueError, RuntimeError) as error:
                    warn(f"line {lines[i].number}: {clip_text(str(error), 300)}; wrote an empty line")
                    results.append(None)
        for index, result in zip(chunk, results):
            if result is not None:
                outputs[index] = (replace_unknown_words(result) if replace_unknown else result).text
    return outputs


def _write_lines(outputs: Sequence[str], stream: IO) -> None:
    stream.write("".join(output + "\n" for output in outputs))
    stream.flush()


def translate_stream(trained, stdin: IO, stdout: IO, beam_width: int = 1, batch_size: int = 64,
                     replace_unknown: bool = False) -> int:
    """Translate `stdin` to `stdout`, one line per input line; warnings go to stderr. Returns 0."""
    lines = _check_lines(_read_lines(getattr(stdin, "buffer", stdin)), trained.src_vocab, _warn_on_stderr)
    outputs = _translate_lines(trained, lines, beam_width=beam_width, batch_size=batch_size, warn=_warn_on_stderr,
                              replace_unknown=replace_unknown)
    _write_lines(outputs, stdout)
    return 0


def source_warnings(words: Sequence[str], unknown: Sequence[str]) -> list[str]:
    """Warnings for a translatable source (`prepare_source`'s words and unknown): unknown words, only punctuation."""
    warnings = []
    if unknown:
        warnings.append(f"unknown words fed as <unk>: {clip_text(', '.join(unknown))}")
    if not any(character.isalpha() for word in words for character in word):
        warnings.append(f"only punctuation ({clip_text(' '.join(words))}), no word to translate; the output is a guess")
    return warnings


def attention_table(translation: Translation, digits: int = 2) -> str:
    """The (T, S) attention as text, a row per output token (a message without attention)."""
    if translation.attention is None:
        return "(this model has no attention: nothing to show)"
    weights = translation.attention.tolist()  # T rows of S floats
    width = max(digits + 2, *(len(token) for token in translation.source_tokens))
    row_label = max(len(token) for token in translation.output_tokens)
    lines = [" " * row_label + " " + " ".join(f"{token:>{width}}" for token in translation.source_tokens)]
    for token, row in zip(translation.output_tokens, weights):
        lines.append(f"{token:>{row_label}} " + " ".join(f"{value:>{width}.{digits}f}" for value in row))
    return "\n".join(lines)
