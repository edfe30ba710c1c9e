"""The course's command line, `python -m course_utils <command> [options]`: thin commands over the library (which
never imports it): data and translate (commands.py), train and compare (train.py), pretrain (pretrain.py)."""
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
    for add in (add_data_parser, add_train_parser, add_translate_parser, add_compare_parser, add_pretrain_parser):
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default: sys.argv[1:]; COURSE_FAST turns on --fast), run the command, return its exit status."""
    from course_utils.runtime import fast_mode

    args = build_parser().parse_args(argv)
    if hasattr(args, "fast"):
        args.fast = args.fast or fast_mode()
    return args.func(args)
