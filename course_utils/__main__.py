"""The headless command line: `python -m course_utils <command> [<subcommand>] [options]`.

    python -m course_utils data check     # find (or download) the corpus and verify it
    python -m course_utils data stats     # read/kept counts, vocabulary and split sizes, example pairs
    python -m course_utils train --attention bahdanau --epochs 5 --output model.pt   # train, test, save
    python -m course_utils translate --checkpoint model.pt "je suis tres fatigue ."  # or lines on stdin
    python -m course_utils compare        # every attention type, same budget/seed/data: one table
    python -m course_utils site --output site/   # offline static site: pages, slides, solutions

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
    from course_utils import corpus, data
    from course_utils.train import enough_pairs_problem

    try:
        path = corpus.find_corpus(download=not args.no_download)
        report = corpus.check_corpus(path)
    except corpus.CorpusError as error:
        return _error(str(error))
    print(report)
    try:  # readable is not enough: the course filters the pairs; say when too few are left to train on
        problem = enough_pairs_problem(data.load_course_data(path=path, verbose=False))
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
                                       min_freq=args.min_freq, path=args.path, verbose=False)
    except data.CorpusError as error:
        return _error(str(error))
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


# -------------------------------------------------------------------------------------------------------- train
def _attention_choices() -> tuple[str, ...]:
    """The attention kinds a lecture recipe can be trained with: seq2seq.ATTENTION_KINDS without the 2017 exhibit."""
    from course_utils.seq2seq import ATTENTION_KINDS

    return tuple(kind for kind in ATTENTION_KINDS if kind != "location")


def _recipe_from_args(args: argparse.Namespace, attention: str | None = None):
    """The named recipe with the command line's overrides applied (None keeps the recipe's value)."""
    from course_utils.recipes import get_recipe

    recipe = get_recipe(args.recipe)
    model_overrides = {field: value for field, value in (("attention", attention), ("hidden_size", args.hidden))
                       if value is not None}
    train_overrides = {field: value for field, value in (
        ("epochs", args.epochs), ("seed", args.seed), ("batch_size", args.batch_size), ("learning_rate", args.lr),
        ("time_budget", args.time_budget)) if value is not None}
    recipe = recipe.with_model(**model_overrides).with_training(**train_overrides)
    if recipe.model.attention != get_recipe(args.recipe).model.attention:
        recipe = recipe.with_model(name=f"{args.recipe.split('-')[0]}-{recipe.model.attention}")
    return recipe


def _check_device(device: str) -> str | None:
    """None when `device` can be used here, else the one-line reason (runtime.resolve_device's message)."""
    from course_utils.runtime import resolve_device

    try:
        resolve_device(device)
    except ValueError as error:
        return str(error)
    return None


def _load_trainable_data(verbose: bool = True):
    """The course data, or (None, message) when it is missing or too small to train and evaluate on."""
    from course_utils import data
    from course_utils.train import enough_pairs_problem

    try:
        course = data.load_course_data(verbose=verbose)
    except data.CorpusError as error:
        return None, str(error)
    return course, enough_pairs_problem(course)


def cmd_train(args: argparse.Namespace) -> int:
    """Train one model, print per-epoch metrics and the test scores, save the checkpoint and an attention figure.

    Everything that can be checked is checked before training (options, device, where the checkpoint goes, enough
    data); the checkpoint is saved right after training, to a fallback location if `--output` fails after all.
    """
    from pathlib import Path

    from course_utils.checkpoints import CheckpointError, check_writable, save_checkpoint_or_fallback
    from course_utils.corpus import data_dir
    from course_utils.evaluate import evaluate
    from course_utils.recipes import FAST_EVAL_PAIRS, FAST_OVERRIDES, train_recipe
    from course_utils.runtime import fast_mode, set_threads
    from course_utils.translate import translate_batch

    try:
        recipe = _recipe_from_args(args, args.attention)
    except (KeyError, ValueError) as error:
        return _error(str(error).strip("'\""), 2)
    problem = _check_device(args.device)
    if problem:
        return _error(problem, 2)
    fast = args.fast or fast_mode()
    set_threads(log=print)
    default_output = data_dir() / "models" / f"cli-{recipe.name}{'-fast' if fast else ''}.pt"
    output = Path(args.output) if args.output else default_output
    try:
        check_writable(output)
    except CheckpointError as error:
        return _error(str(error), 2)
    course, problem = _load_trainable_data()
    if problem:
        return _error(problem)
    explicit = {"epochs": args.epochs} if args.epochs else {}  # wins over fast mode's single epoch
    if fast:  # the banner shows the settings really used
        recipe = recipe.with_training(**{**FAST_OVERRIDES, **explicit})
    print(f"Training {recipe.name}{' in fast mode' if fast else ''} ({recipe.train.epochs} epoch(s)): {recipe}")
    trained = train_recipe(recipe, course, fast=fast, progress=not args.no_progress, device=args.device, **explicit)
    trained.model.cpu()
    try:
        saved, failure = save_checkpoint_or_fallback(output, trained)  # first, so nothing after can lose it
    except CheckpointError as error:
        return _error(str(error))
    if failure:
        print(f"warning: could not write {output} ({failure}); saved the checkpoint to {saved} instead",
              file=sys.stderr)
    test_pairs = course.splits.test[:FAST_EVAL_PAIRS] if fast else course.splits.test
    result = evaluate(trained.model, test_pairs, course.src_vocab, course.tgt_vocab, beam_width=recipe.beam_width)
    decoding = "greedy" if recipe.beam_width == 1 else f"beam search, width {recipe.beam_width}"
    print(f"\ntest ({len(test_pairs):,} pairs, {decoding}): BLEU {result.bleu:.2f}  chrF {result.chrf:.2f}  "
          f"loss {result.loss:.3f}  perplexity {result.perplexity:.2f}")
    print(f"sacreBLEU signature: {result.signature}\n")
    print(result.table(n=args.examples))
    print(f"\ncheckpoint saved to {saved}")
    if trained.model_config.attention == "none":
        print("no attention figure: this model has no attention")
        return 0
    from course_utils import viz

    sentences = [pair.source for pair in course.splits.test[:args.figure_sentences]]
    translations = translate_batch(trained.model, course.src_vocab, course.tgt_vocab, sentences)
    figure = viz.plot_sentence_grid(translations, title=f"{recipe.name}: attention on test sentences")
    try:
        path = viz.save_figure(figure, saved.with_suffix(".attention.png"))
    except OSError as error:
        print(f"warning: could not save the attention figure ({error.strerror or error})", file=sys.stderr)
        return 0
    print(f"attention heatmaps of {len(sentences)} test sentences saved to {path}")
    return 0


def add_recipe_arguments(parser: argparse.ArgumentParser, default_recipe: str) -> None:
    """The options `train` and `compare` share: a recipe and overrides of its settings."""
    parser.add_argument("--recipe", default=default_recipe, help="a recipe of course_utils.recipes.RECIPES "
                        f"(default {default_recipe}); the options below override its settings")
    parser.add_argument("--hidden", type=int, default=None, help="hidden size H")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--lr", type=float, default=None, help="Adam's learning rate")
    parser.add_argument("--time-budget", type=float, default=None, help="stop training after this many seconds")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--fast", action="store_true", help="train briefly on a few hundred pairs (as COURSE_FAST=1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def add_train_parser(commands: argparse._SubParsersAction) -> None:
    """`train`."""
    parser = commands.add_parser("train", help="train a model, report test BLEU/chrF, save a checkpoint")
    parser.add_argument("--attention", choices=_attention_choices(), default=None,
                        help="attention type (default: the recipe's)")
    add_recipe_arguments(parser, "lecture-bahdanau")
    parser.add_argument("--output", default=None, help="checkpoint path (default data/models/cli-<recipe>.pt); "
                        "the attention figure goes next to it as <name>.attention.png")
    parser.add_argument("--examples", type=int, default=8, help="test sentences to print")
    parser.add_argument("--figure-sentences", type=int, default=4, help="test sentences in the attention figure")
    parser.set_defaults(func=cmd_train)


# ---------------------------------------------------------------------------------------------------- translate
def _error(message: str, status: int = 1) -> int:
    """Print a one-line error on stderr and return the exit status for it."""
    print(f"error: {message}", file=sys.stderr)
    return status


def cmd_translate(args: argparse.Namespace) -> int:
    """Translate the sentence argument, or every line of standard input."""
    from course_utils.checkpoints import CheckpointError, load_checkpoint
    from course_utils.runtime import resolve_device
    from course_utils.translate import attention_table, prepare_source, source_warnings, translate

    if args.beam < 1:  # every option is checked before the checkpoint is loaded or any input is read
        return _error(f"--beam must be at least 1, got {args.beam}", 2)
    if args.batch_size < 1:
        return _error(f"--batch-size must be at least 1, got {args.batch_size}", 2)
    try:
        resolve_device(args.device)
    except ValueError as error:
        return _error(str(error), 2)
    try:
        trained = load_checkpoint(args.checkpoint, device=args.device)
    except CheckpointError as error:
        return _error(str(error))
    if args.sentence is None:
        from course_utils.batch_translate import translate_stream

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
        print()
        print(attention_table(translation))
    return 0


def add_translate_parser(commands: argparse._SubParsersAction) -> None:
    """`translate`."""
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


# ------------------------------------------------------------------------------------------------------ compare
def cmd_compare(args: argparse.Namespace) -> int:
    """Train every attention type with one budget, seed and data; print one table and save the loss curves."""
    from pathlib import Path

    from course_utils.attention import check_key_size
    from course_utils.corpus import data_dir
    from course_utils.evaluate import evaluate
    from course_utils.recipes import FAST_EVAL_PAIRS, RECIPES, train_recipe
    from course_utils.runtime import fast_mode, set_threads
    from course_utils.seq2seq import count_parameters
    from course_utils.train import sample_pairs

    try:
        base = _recipe_from_args(args)
    except (KeyError, ValueError) as error:
        return _error(str(error).strip("'\""), 2)
    problem = _check_device(args.device)
    if problem:
        return _error(problem, 2)
    course, problem = _load_trainable_data()
    if problem:
        return _error(problem)
    fast = args.fast or fast_mode()
    set_threads(log=print)
    test_pairs = course.splits.test[:FAST_EVAL_PAIRS] if fast else course.splits.test
    rows, histories = [], {}
    attentions = args.attention or [recipe.model.attention for name, recipe in RECIPES.items()
                                    if name.startswith("lecture-")]
    for attention in attentions:
        model_fields = {"attention": attention}
        try:  # a bidirectional recipe gives 2H keys, which dot scores cannot read: train that row one-way, and say so
            check_key_size(attention, base.model.hidden_size, base.model.key_size)
        except ValueError as problem:
            print(f"note: {problem}; compare trains the {attention!r} row with bidirectional=False, unlike the others")
            model_fields["bidirectional"] = False
        recipe = base.with_model(name=f"{base.name.split('-')[0]}-{attention}", **model_fields)
        print(f"\n== {recipe.name}")
        explicit = {"epochs": args.epochs} if args.epochs else {}  # wins over fast mode's single epoch
        trained = train_recipe(recipe, course, fast=fast, progress=not args.no_progress, device=args.device,
                               **explicit)
        dev_pairs = course.splits.dev[:FAST_EVAL_PAIRS] if fast else course.splits.dev
        dev = evaluate(trained.model, dev_pairs, course.src_vocab, course.tgt_vocab)
        test = evaluate(trained.model, test_pairs, course.src_vocab, course.tgt_vocab,
                              beam_width=recipe.beam_width)
        history = trained.history
        histories[attention] = history
        rows.append([attention, f"{count_parameters(trained.model):,}", f"{history.train_seconds / history.epochs:.1f}",
                     str(history.epochs), f"{dev.bleu:.2f}", f"{test.bleu:.2f}", f"{test.chrf:.2f}"])
    header = ["attention", "params", "s/epoch", "epochs", "dev BLEU", "test BLEU", "test chrF"]
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    print()
    for row in [header, ["-" * w for w in widths]] + rows:
        cells = [cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        print("  ".join(cells))
    trained_on = len(sample_pairs(course.splits.train, trained.train_config.max_train_pairs, trained.train_config.seed))
    print(f"\nsame data (trained on {trained_on:,} of the {len(course.splits.train):,} training pairs), seed "
          f"{base.train.seed}, recipe {args.recipe}{' (fast mode)' if fast else ''}; sacreBLEU: {test.signature}")
    from course_utils import viz

    figure_path = Path(args.figure) if args.figure else data_dir() / "compare" / "loss_curves.png"
    try:
        viz.save_figure(viz.plot_history(histories, title=f"{args.recipe}: every attention type"), figure_path)
    except OSError as error:  # the table above is the result; a figure that cannot be written loses nothing else
        print(f"warning: could not save the loss curves to {figure_path} ({error.strerror or error}); pass "
              "--figure a writable path", file=sys.stderr)
        return 0
    print(f"loss curves saved to {figure_path}")
    return 0


def add_compare_parser(commands: argparse._SubParsersAction) -> None:
    """`compare`."""
    parser = commands.add_parser("compare", help="train every attention type under one budget; one table")
    add_recipe_arguments(parser, "lecture-bahdanau")
    parser.add_argument("--attention", nargs="+", choices=_attention_choices(),
                        default=None, help="which attention types (default: those of the lecture recipes)")
    parser.add_argument("--figure", default=None, help="loss-curve PNG (default data/compare/loss_curves.png)")
    parser.set_defaults(func=cmd_compare)


# ---------------------------------------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each `add_<name>_parser` adds one command."""
    parser = argparse.ArgumentParser(prog="python -m course_utils",
                                     description="Dissecting Attention: the course's command line.")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    add_data_parser(commands)
    add_train_parser(commands)
    add_translate_parser(commands)
    add_compare_parser(commands)
    from course_utils.pretrain import add_pretrain_parser  # `pretrain`: course_utils/pretrain.py

    add_pretrain_parser(commands)
    from course_utils.site import add_site_parser  # `site`: course_utils/site.py

    add_site_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default: sys.argv[1:]), run the chosen command, return its exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
