"""The command line's `train` and `compare` commands: a lecture recipe with the command line's overrides, trained
and tested (one model with a checkpoint and an attention figure; or every attention type in one table).

    python -m course_utils train --attention bahdanau --epochs 5 --output model.pt   # train, test, save
    python -m course_utils compare        # every attention type, same budget/seed/data: one table

Both start alike (_start: the recipe, the device); the settings they train with are merged in one place,
zoo.training_config. Heavy modules are imported inside the functions so that `--help` is instant.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

from course_utils.cli.commands import _check_device, _error

__all__ = ["cmd_train", "add_recipe_arguments", "add_train_parser", "cmd_compare", "add_compare_parser"]


def _attention_choices() -> tuple[str, ...]:
    """The attention kinds a lecture recipe can be trained with: seq2seq.ATTENTION_KINDS without the 2017 exhibit,
    and "transformer" (the recipe of the same prefix: lecture-transformer, full-transformer; notebook 09)."""
    from course_utils.seq2seq import ATTENTION_KINDS

    return (*(kind for kind in ATTENTION_KINDS if kind != "location"), "transformer")


def _base_recipe(name: str, attention: str | None):
    """The recipe an --attention choice starts from: `name`; its prefix's Transformer recipe for "transformer"; its
    prefix's GRU recipe (<prefix>-bahdanau) for a GRU attention asked of a Transformer recipe."""
    from course_utils.recipes import get_recipe

    recipe, prefix = get_recipe(name), name.split("-")[0]
    if attention == "transformer":
        return get_recipe(f"{prefix}-transformer")
    if attention is not None and recipe.model.attention == "transformer":
        return get_recipe(f"{prefix}-bahdanau")
    return recipe


def _recipe_from_args(args: argparse.Namespace, attention: str | None = None):
    """The named recipe with the command line's overrides applied (None keeps the recipe's value)."""
    from course_utils.recipes import get_recipe

    recipe = _base_recipe(args.recipe, attention)
    if recipe.model.attention == "transformer":
        attention = None  # the architecture, not a field to set
    model_overrides = {field: value for field, value in (("attention", attention), ("hidden_size", args.hidden))
                       if value is not None}
    train_overrides = {field: value for field, value in (
        ("epochs", args.epochs), ("seed", args.seed), ("batch_size", args.batch_size), ("learning_rate", args.lr),
        ("time_budget", args.time_budget)) if value is not None}
    recipe = recipe.with_model(**model_overrides).with_training(**train_overrides)
    if recipe.model.attention != get_recipe(args.recipe).model.attention:
        recipe = recipe.with_model(name=f"{args.recipe.split('-')[0]}-{recipe.model.attention}")
    return recipe


def _start(args: argparse.Namespace, attention: str | None = None):
    """What `train` and `compare` check first: (recipe, fast, None), or (None, False, exit status) once the bad
    option or device has been reported."""
    try:
        recipe = _recipe_from_args(args, attention)
    except (KeyError, ValueError) as error:
        return None, False, _error(str(error).strip("'\""), 2)
    problem = _check_device(args.device)
    if problem:
        return None, False, _error(problem, 2)
    return recipe, args.fast, None


def _explicit(args: argparse.Namespace) -> dict:
    """The training overrides train_recipe gets on top of fast mode's: an explicit --epochs wins over its one epoch."""
    return {"epochs": args.epochs} if args.epochs else {}


def _load_trainable_data():
    """The course data, or (None, message) when it is missing or too small to train and evaluate on."""
    from course_utils import data
    from course_utils.train import enough_pairs_problem

    try:
        course = data.load_course_data()
    except data.CorpusError as error:
        return None, str(error)
    return course, enough_pairs_problem(course)


# -------------------------------------------------------------------------------------------------------- train
def cmd_train(args: argparse.Namespace) -> int:
    """Train one model, print per-epoch metrics and the test scores, save the checkpoint and an attention figure.

    Everything that can be checked is checked before training (options, device, where the checkpoint goes, enough
    data, and that the checkpoint can be written); the checkpoint is saved right after training.
    """
    from pathlib import Path

    from course_utils.checkpoints import CheckpointError, check_writable
    from course_utils.corpus import data_dir
    from course_utils.runtime import set_threads
    from course_utils.zoo import save_checkpoint, train_recipe, training_config

    recipe, fast, status = _start(args, args.attention)
    if status is not None:
        return status
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
    shown = dataclasses.replace(recipe, train=training_config(recipe, fast, **_explicit(args)))  # what it trains with
    print(f"Training {shown.name}{' in fast mode' if fast else ''} ({shown.train.epochs} epoch(s)): {shown}")
    trained = train_recipe(recipe, course, fast=fast, progress=not args.no_progress, device=args.device,
                           **_explicit(args))
    trained.model.cpu()
    try:
        saved = save_checkpoint(output, trained)  # first, so nothing after can lose it
    except OSError as error:
        return _error(f"cannot write {output}: {error.strerror or error}; train again with --output in a writable "
                      "folder")
    _print_test_scores(trained, course, recipe, fast, args.examples)
    print(f"\ncheckpoint saved to {saved}")
    return _save_attention_figure(trained, course, recipe, saved, args.figure_sentences)


def _print_test_scores(trained, course, recipe, fast: bool, examples: int) -> None:
    """The test split's scores (fast mode: its first FAST_EVAL_PAIRS), the sacreBLEU signature and example rows."""
    from course_utils.evaluate import evaluate
    from course_utils.zoo import FAST_EVAL_PAIRS

    test_pairs = course.splits.test[:FAST_EVAL_PAIRS] if fast else course.splits.test
    result = evaluate(trained.model, test_pairs, course.src_vocab, course.tgt_vocab, beam_width=recipe.beam_width)
    decoding = "greedy" if recipe.beam_width == 1 else f"beam search, width {recipe.beam_width}"
    print(f"\ntest ({len(test_pairs):,} pairs, {decoding}): BLEU {result.bleu:.2f}  chrF {result.chrf:.2f}  "
          f"loss {result.loss:.3f}  perplexity {result.perplexity:.2f}")
    print(f"sacreBLEU signature: {result.signature}\n")
    print(result.table(n=examples))


def _save_attention_figure(trained, course, recipe, saved, sentences_wanted: int) -> int:
    """The attention heatmaps of a few test sentences, next to the checkpoint; a figure that cannot be written is a
    warning (exit status 0: the checkpoint is the result)."""
    if trained.model_config.attention == "none":
        print("no attention figure: this model has no attention")
        return 0
    from course_utils import viz
    from course_utils.translate import translate_batch

    sentences = [pair.source for pair in course.splits.test[:sentences_wanted]]
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
    """`train`. """
    parser = commands.add_parser("train", help="train a model, report test BLEU/chrF, save a checkpoint")
    parser.add_argument("--attention", choices=_attention_choices(), default=None,
                        help="attention type (default: the recipe's)")
    add_recipe_arguments(parser, "lecture-bahdanau")
    parser.add_argument("--output", default=None, help="checkpoint path (default data/models/cli-<recipe>.pt); "
                        "the attention figure goes next to it as <name>.attention.png")
    parser.add_argument("--examples", type=int, default=8, help="test sentences to print")
    parser.add_argument("--figure-sentences", type=int, default=4, help="test sentences in the attention figure")
    parser.set_defaults(func=cmd_train)


# ------------------------------------------------------------------------------------------------------ compare
def cmd_compare(args: argparse.Namespace) -> int:
    """Train every attention type with one budget, seed and data; print one table and save the loss curves.

    """
    from course_utils.recipes import RECIPES
    from course_utils.runtime import set_threads
    from course_utils.train import sample_pairs
    from course_utils.zoo import FAST_EVAL_PAIRS

    base, fast, status = _start(args)
    if status is not None:
        return status
    course, problem = _load_trainable_data()
    if problem:
        return _error(problem)
    set_threads(log=print)
    test_pairs = course.splits.test[:FAST_EVAL_PAIRS] if fast else course.splits.test
    attentions = args.attention or [recipe.model.attention for name, recipe in RECIPES.items()
                                    if name.startswith("lecture-")]
    rows, histories = [], {}
    for attention in attentions:
        trained, row, test = _compare_row(args, base, attention, course, fast, test_pairs)
        histories[attention] = trained.history
        rows.append(row)
    _print_table(["attention", "params", "s/epoch", "epochs", "dev BLEU", "test BLEU", "test chrF"], rows)
    trained_on = len(sample_pairs(course.splits.train, trained.train_config.max_train_pairs, trained.train_config.seed))
    print(f"\nsame data (trained on {trained_on:,} of the {len(course.splits.train):,} training pairs), seed "
          f"{base.train.seed}, recipe {args.recipe}{' (fast mode)' if fast else ''}; sacreBLEU: {test.signature}")
    return _save_loss_curves(args, histories)


def _compare_row(args: argparse.Namespace, base, attention: str, course, fast: bool, test_pairs):
    """Train `base` with `attention` (one-way when its keys do not fit dot scores; the Transformer recipe of the same
    prefix for "transformer"); (trained, table row, test score)."""
    from course_utils.attention import check_key_size
    from course_utils.evaluate import evaluate
    from course_utils.seq2seq import count_parameters
    from course_utils.zoo import FAST_EVAL_PAIRS, train_recipe

    if attention == "transformer" or base.model.attention == "transformer":  # a Transformer in the table
        base = _recipe_from_args(args, "transformer" if attention == "transformer" else "bahdanau")
    model_fields = {} if attention == "transformer" else {"attention": attention}
    try:  # a bidirectional recipe gives 2H keys, which dot scores cannot read: train that row one-way, and say so
        if model_fields:
            check_key_size(attention, base.model.hidden_size, base.model.key_size)
    except ValueError as problem:
        print(f"note: {problem}; compare trains the {attention!r} row with bidirectional=False, unlike the others")
        model_fields["bidirectional"] = False
    recipe = base.with_model(name=f"{base.name.split('-')[0]}-{attention}", **model_fields)
    print(f"\n== {recipe.name}")
    trained = train_recipe(recipe, course, fast=fast, progress=not args.no_progress, device=args.device,
                           **_explicit(args))
    dev_pairs = course.splits.dev[:FAST_EVAL_PAIRS] if fast else course.splits.dev
    dev = evaluate(trained.model, dev_pairs, course.src_vocab, course.tgt_vocab)
    test = evaluate(trained.model, test_pairs, course.src_vocab, course.tgt_vocab, beam_width=recipe.beam_width)
    history = trained.history
    row = [attention, f"{count_parameters(trained.model):,}", f"{history.train_seconds / history.epochs:.1f}",
           str(history.epochs), f"{dev.bleu:.2f}", f"{test.bleu:.2f}", f"{test.chrf:.2f}"]
    return trained, row, test


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    """Rows under a header, the first column left-aligned and the others right-aligned."""
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    print()
    for row in [header, ["-" * w for w in widths]] + rows:
        cells = [cell.rjust(width) if i else cell.ljust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        print("  ".join(cells))


def _save_loss_curves(args: argparse.Namespace, histories: dict) -> int:
    """Every row's loss curves in one PNG; a figure that cannot be written is a warning (the table is the result)."""
    from pathlib import Path

    from course_utils import viz
    from course_utils.corpus import data_dir

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
    """`compare`. """
    parser = commands.add_parser("compare", help="train every attention type under one budget; one table")
    add_recipe_arguments(parser, "lecture-bahdanau")
    parser.add_argument("--attention", nargs="+", choices=_attention_choices(),
                        default=None, help="which attention types (default: those of the lecture recipes)")
    parser.add_argument("--figure", default=None, help="loss-curve PNG (default data/compare/loss_curves.png)")
    parser.set_defaults(func=cmd_compare)
