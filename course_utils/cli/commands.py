"""The command line's `data` and `translate` commands, and the helpers every command uses."""
from __future__ import annotations

import argparse
import random
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from course_utils.data import CourseData

__all__ = ["cmd_data_check", "cmd_data_stats", "add_data_parser", "cmd_translate", "add_translate_parser"]


def _error(message: str, status: int = 1) -> int:
    """Print a one-line error on stderr and return the exit status for it."""
    print(f"error: {message}", file=sys.stderr)
    return status


def _check_device(device: str) -> str | None:
    """The one-line reason why `device` cannot be used here; None when it can."""
    from course_utils.runtime import resolve_device

    try:
        resolve_device(device)
    except ValueError as error:
        return str(error)


def cmd_data_check(args: argparse.Namespace) -> int:
    """Locate the corpus (downloading it if allowed), verify it, print where it is and what it holds."""
    from course_utils import corpus, data
    from course_utils.train import enough_pairs_problem

    try:
        path = corpus.find_corpus(download=not args.no_download)
        report = corpus.check_corpus(path)
    except corpus.CorpusError as error:
        return _error(str(error))
    print(report)
    try:  # readable is not enough: say when too few pairs are left to train on
        problem = enough_pairs_problem(data.load_course_data(path=path, log=None))
    except data.CorpusError as error:
        problem = str(error)
    if problem:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def cmd_data_stats(args: argparse.Namespace) -> int:
    """Run the whole data pipeline and print counts, vocabulary sizes, split sizes and a few example pairs."""
    from course_utils import data

    try:
        course = data.load_course_data(reverse=not args.forward, max_length=args.max_length, seed=args.seed,
                                       min_freq=args.min_freq, path=args.path, log=None)
    except data.CorpusError as error:
        return _error(str(error))
    print(_describe_course_data(course, examples=args.examples, seed=args.seed))
    return 0


def add_data_parser(commands: argparse._SubParsersAction) -> None:
    data_parser = commands.add_parser("data", help="find, verify and describe the corpus")
    data_commands = data_parser.add_subparsers(dest="data_command", metavar="{check,stats}", required=True)
    check = data_commands.add_parser("check", help="locate/download the corpus and verify it")
    check.add_argument("--no-download", action="store_true", help="fail instead of downloading")
    check.set_defaults(func=cmd_data_check)
    stats = data_commands.add_parser("stats", help="pair counts, vocabulary and split sizes, examples")
    stats.add_argument("--path", default=None, help="corpus file or archive (default: the usual search order)")
    stats.add_argument("--forward", action="store_true", help="English->French instead of French->English")
    stats.add_argument("--max-length", type=int, default=10, help="keep pairs with fewer words a side")
    stats.add_argument("--min-freq", type=int, default=1, help="rarer words map to <unk>")
    stats.add_argument("--seed", type=int, default=0, help="split seed")
    stats.add_argument("--examples", type=int, default=5, help="how many example pairs to print")
    stats.set_defaults(func=cmd_data_stats)


def cmd_translate(args: argparse.Namespace) -> int:
    """Translate the sentence argument, or every line of standard input."""
    from course_utils.checkpoints import CheckpointError
    from course_utils.cli.batch_translate import attention_table, source_warnings
    from course_utils.translate import prepare_source, translate
    from course_utils.zoo import load_checkpoint

    if args.beam < 1:  # every option is checked before the checkpoint is loaded or stdin is read
        return _error(f"--beam must be at least 1, got {args.beam}", 2)
    if args.batch_size < 1:
        return _error(f"--batch-size must be at least 1, got {args.batch_size}", 2)
    if problem := _check_device(args.device):
        return _error(problem, 2)
    try:
        trained = load_checkpoint(args.checkpoint, device=args.device)
    except CheckpointError as error:
        return _error(str(error))
    if args.sentence is None:
        from course_utils.cli.batch_translate import translate_stream

        return translate_stream(trained, sys.stdin, sys.stdout, beam_width=args.beam, batch_size=args.batch_size,
                                replace_unknown=args.replace_unk)
    try:
        words, _, unknown = prepare_source(trained.src_vocab, args.sentence)
        translation = translate(trained.model, trained.src_vocab, trained.tgt_vocab, args.sentence,
                                beam_width=args.beam, replace_unknown=args.replace_unk)
    except ValueError as error:
        return _error(str(error))
    for message in source_warnings(words, unknown):
        print(f"note: {message}", file=sys.stderr)
    print(translation.text)
    if args.show_attention:
        print(f"\n{attention_table(translation)}")
    return 0


def add_translate_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("translate", help="translate a sentence, or standard input line by line")
    parser.add_argument("sentence", nargs="?", default=None,
                        help="raw French text (normalised like the corpus); omit to read lines from stdin")
    parser.add_argument("--checkpoint", required=True, help="a checkpoint written by `train`")
    parser.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy)")
    parser.add_argument("--show-attention", action="store_true", help="print the attention matrix as text")
    parser.add_argument("--replace-unk", action="store_true",
                        help="replace each output <unk> by the source word it attends to most (notebook 07)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch when reading stdin")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.set_defaults(func=cmd_translate)


def _describe_course_data(data: CourseData, examples: int = 5, seed: int = 0) -> str:
    """A plain-text summary (what `python -m course_utils data stats` prints)."""
    from course_utils.corpus import display_path
    from course_utils.vocab import Vocab

    src_name, tgt_name = data.src_vocab.name, data.tgt_vocab.name
    all_src = Vocab.build(pair.source for pair in data.pairs)
    all_tgt = Vocab.build(pair.target for pair in data.pairs)
    where = display_path(data.corpus_path) if data.corpus_path else "(in memory)"
    lines = [f"corpus:      {where}",
             f"read:        {data.lines_read:,} sentence pairs",
             f"kept:        {len(data.pairs):,} sentence pairs ({src_name} -> {tgt_name})",
             f"splits:      train {len(data.splits.train):,} / dev {len(data.splits.dev):,} / "
             f"test {len(data.splits.test):,} pairs (by source sentence)",
             f"vocab train: {src_name} {len(data.src_vocab):,}, {tgt_name} {len(data.tgt_vocab):,} "
             f"(4 special tokens included)",
             f"vocab all:   {src_name} {len(all_src):,}, {tgt_name} {len(all_tgt):,} (all kept pairs)",
             "examples:"]
    for pair in random.Random(seed).sample(data.pairs, min(examples, len(data.pairs))):
        lines.append(f"  {pair.source}  ->  {pair.target}")
    return "\n".join(lines)
