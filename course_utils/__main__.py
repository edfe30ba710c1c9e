"""The headless command line: `python -m course_utils <command> [<subcommand>] [options]`.

    python -m course_utils data check     # find (or download) the corpus and verify it
    python -m course_utils data stats     # read/kept counts, vocabulary and split sizes, example pairs

Each command is a small function `cmd_<name>(args)` registered in `build_parser()`; to add one, write the
function and add a parser for it next to the others. Imports of heavy modules happen inside the functions so
that `--help` is instant.
"""
from __future__ import annotations

import argparse
import sys


# ---------------------------------------------------------------------------------------------------------- data
def cmd_data_check(args: argparse.Namespace) -> int:
    """Locate the corpus (downloading it if allowed), verify it, print where it is and what it holds."""
    from course_utils import data

    try:
        path = data.find_corpus(download=not args.no_download)
        report = data.check_corpus(path)
    except data.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0


def cmd_data_stats(args: argparse.Namespace) -> int:
    """Run the whole data pipeline and print counts, vocabulary sizes, split sizes and a few example pairs."""
    from course_utils import data

    try:
        course = data.load_course_data(reverse=not args.forward, max_length=args.max_length, seed=args.seed,
                                       min_freq=args.min_freq, path=args.path, verbose=False)
    except data.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(data.describe_course_data(course, examples=args.examples, seed=args.seed))
    return 0


def add_data_parser(commands: argparse._SubParsersAction) -> None:
    """`data check` and `data stats`."""
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


# ---------------------------------------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each `add_<name>_parser` adds one command."""
    parser = argparse.ArgumentParser(prog="python -m course_utils",
                                     description="Dissecting Attention: the course's command line.")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    add_data_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default: sys.argv[1:]), run the chosen command, return its exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
