"""The course's command line, `python -m course_utils <command> [<subcommand>] [options]`: thin commands over the
library (nothing in the library imports it, no notebook does).

    python -m course_utils data check     # find (or download) the corpus and verify it
    python -m course_utils data stats     # read/kept counts, vocabulary and split sizes, example pairs
    python -m course_utils train --attention bahdanau --epochs 5 --output model.pt   # train, test, save
    python -m course_utils translate --checkpoint model.pt "je suis tres fatigue ."  # or lines on stdin
    python -m course_utils compare        # every attention type, same budget/seed/data: one table
    python -m course_utils pretrain       # before class: train and cache every model the notebooks load

The commands live in commands.py (data, translate), train.py (train, compare), pretrain.py (pretrain, --export and
--import) and batch_translate.py (translate's standard-input path). Each is a function `cmd_<name>(args)` with an
`add_<name>_parser(commands)` next to it, registered in build_parser. COURSE_FAST is read here, once: it turns on
every command's --fast.
"""
from __future__ import annotations

import argparse

from course_utils.cli.commands import add_data_parser, add_translate_parser
from course_utils.cli.pretrain import add_pretrain_parser
from course_utils.cli.train import add_compare_parser, add_train_parser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each `add_<name>_parser` adds one command."""
    parser = argparse.ArgumentParser(prog="python -m course_utils",
                                     description="Dissecting Attention: the course's command line.")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    add_data_parser(commands)
    add_train_parser(commands)
    add_translate_parser(commands)
    add_compare_parser(commands)
    add_pretrain_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default: sys.argv[1:]), run the chosen command, return its exit status."""
    from course_utils.runtime import fast_mode

    args = build_parser().parse_args(argv)
    if hasattr(args, "fast"):
        args.fast = args.fast or fast_mode()
    return args.func(args)
