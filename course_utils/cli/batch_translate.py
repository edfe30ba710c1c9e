"""Translating a stream of lines (`python -m course_utils translate` without a sentence), in four separate steps:

    raw = _read_lines(sys.stdin.buffer)                   # bytes, split on b"\n" only
    lines = _check_lines(raw, src_vocab, warn)            # one _SourceLine per input line; bad ones warned about
    outputs = _translate_lines(trained, lines, warn=warn)  # batched; a failing batch is retried line by line
    _write_lines(outputs, sys.stdout)                     # exactly one output line per input line, in order

No input loses other lines' work: a line that is not UTF-8, is empty, cannot be translated, or breaks its batch
(a sentence too long for the 2017 location-attention model) costs only its own output line, which is written
empty, and a warning names its line number. Lines are split on b"\n" only, never on the other characters that
`str.splitlines()` also treats as line breaks (U+2028, \x0b, \x0c, \x1c-\x1e, \x85), which stay inside their line.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import IO, NamedTuple

from course_utils.data import length_batches
from course_utils.translate import (
    Source,
    clip_text,
    prepare_source,
    replace_unknown_words,
    source_warnings,
    translate_sources,
)

__all__ = ["translate_stream"]

_Warn = Callable[[str], None]


def _warn_on_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


class _SourceLine(NamedTuple):
    """One input line: its 1-based number and its text made ready (`translate.prepare_source`), or None when there
    is nothing to translate."""

    number: int
    source: Source | None


def _read_lines(stream: IO) -> list[bytes]:
    """All of `stream` as raw lines: split on b"\\n" only, the final newline ending the last line (not adding one).

    Reads bytes (a text stream is encoded back with surrogateescape, so nothing is lost), so decoding errors are
    a per-line matter for `_check_lines`, not a crash of the whole input.
    """
    data = stream.read()
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if not data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # "a\nb\n" is two lines, not three
    return lines


def _check_lines(raw_lines: Sequence[bytes], src_vocab, warn: _Warn) -> list[_SourceLine]:
    """Decode (UTF-8) and validate each line; warn, naming the line, about every line that will be written empty
    (not UTF-8, empty, nothing translatable) and about unknown words or punctuation-only input.

    A trailing "\\r" (Windows line ends) is dropped.
    """
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        raw = raw.removesuffix(b"\r")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            warn(f"line {number} is not valid UTF-8 (byte {raw[error.start]:#04x} at position {error.start}); "
                 "wrote an empty line")
            lines.append(_SourceLine(number, None))
            continue
        if not text.strip():
            warn(f"line {number} is empty; wrote an empty line")
            lines.append(_SourceLine(number, None))
            continue
        try:
            source = prepare_source(src_vocab, text)
        except ValueError as error:
            warn(f"line {number}: {error}; wrote an empty line")
            lines.append(_SourceLine(number, None))
            continue
        for message in source_warnings(source.words, source.unknown):
            warn(f"line {number}: {message}")
        lines.append(_SourceLine(number, source))
    return lines


def _translate_lines(trained, lines: Sequence[_SourceLine], beam_width: int = 1, batch_size: int = 64,
                    warn: _Warn = _warn_on_stderr, replace_unknown: bool = False) -> list[str]:
    """One output string per _SourceLine, in order ("" for lines without text or whose translation failed), from
    `trained` (a zoo.TrainedModel, or anything with .model, .src_vocab and .tgt_vocab).

    replace_unknown: each output <unk> becomes the source word it attends to most (`translate.replace_unknown_words`).

    Lines of similar length are translated together, `batch_size` at a time. When a batch fails (ValueError or
    RuntimeError, e.g. one sentence longer than the location-attention model's positions), its lines are
    translated one at a time, so only the line at fault is lost, with a warning that names it.
    """
    if batch_size < 1 or beam_width < 1:
        raise ValueError(f"batch_size and beam_width must be >= 1, got {batch_size} and {beam_width}")
    outputs = [""] * len(lines)
    todo = [index for index, line in enumerate(lines) if line.source is not None]
    for batch in length_batches([len(lines[index].source.words) for index in todo], batch_size):
        chunk = [todo[position] for position in batch]
        try:
            results = translate_sources(trained.model, trained.tgt_vocab, [lines[i].source for i in chunk],
                                        beam_width=beam_width, batch_size=len(chunk))
        except (ValueError, RuntimeError):
            results = [_translate_one(trained, lines[i], beam_width, warn) for i in chunk]
        for index, result in zip(chunk, results):
            if result is not None:
                outputs[index] = (replace_unknown_words(result) if replace_unknown else result).text
    return outputs


def _translate_one(trained, line: _SourceLine, beam_width: int, warn: _Warn):
    """The fallback: one line alone; None (and a warning naming the line) when even that fails."""
    try:
        return translate_sources(trained.model, trained.tgt_vocab, [line.source], beam_width=beam_width,
                                 batch_size=1)[0]
    except (ValueError, RuntimeError) as error:
        warn(f"line {line.number}: {clip_text(str(error), 300)}; wrote an empty line")
        return None


def _write_lines(outputs: Sequence[str], stream: IO) -> None:
    """Write one line per output (newline-terminated) and flush."""
    stream.write("".join(output + "\n" for output in outputs))
    stream.flush()


def translate_stream(trained, stdin: IO, stdout: IO, beam_width: int = 1, batch_size: int = 64,
                     replace_unknown: bool = False) -> int:
    """The four steps in order: read `stdin` (bytes where it has them), check each line, translate, write one line
    per input line to `stdout`; warnings go to stderr. `trained` is a zoo.TrainedModel. Returns 0 (bad lines
    cost only their own line)."""
    lines = _check_lines(_read_lines(getattr(stdin, "buffer", stdin)), trained.src_vocab, _warn_on_stderr)
    outputs = _translate_lines(trained, lines, beam_width=beam_width, batch_size=batch_size, warn=_warn_on_stderr,
                              replace_unknown=replace_unknown)
    _write_lines(outputs, stdout)
    return 0
