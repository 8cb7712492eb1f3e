"""One meaning per option name across the subcommands (issue 20).

Every option that two or more subcommands declare is in :data:`SHARED`, with the
subcommands that have it and either ``SAME`` (one help text everywhere: one meaning, said
once) or the meaning in words plus words each help must contain. A new shared option, or
an option that appears in another subcommand, fails the first test until it is declared
here; a help that drifts from its declared meaning fails the second. Options kept only to
refuse an old spelling (hidden from ``--help``) must exit 2 naming the right option.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import pytest

from kernelcv.cli import main
from kernelcv.cli.main import build_parser

SAME = "same help text"
SHARED = {
    # option: (subcommands, meaning or SAME, words every help must contain)
    "--machine": ({"cv", "select"}, SAME, ()),
    "--kernel": ({"cv", "select"}, SAME, ()),
    "--huber-width": ({"cv", "select"}, SAME, ()),
    "--svr-epsilon": ({"cv", "select"}, SAME, ()),
    "--no-intercept": ({"cv", "select", "tune"}, "fit without the intercept (bias)",
                       ("without",)),
    "--multiclass": ({"cv", "select", "tune"}, "one-vs-one or one-vs-rest (tune's default "
                     "is the paper's ovo)", ("ovo", "ovr")),
    "--class-weight": ({"cv", "select"}, SAME, ()),
    "--device": ({"cv", "select"}, SAME, ()),
    "--precision": ({"cv", "select"}, SAME, ()),
    "--sample-weight": ({"cv", "select"}, SAME, ()),
    "--header": ({"cv", "select", "hypothetical", "tune", "predict"}, SAME, ()),
    "--target": ({"cv", "select", "hypothetical", "tune", "predict"}, SAME, ()),
    "--fold-ids": ({"cv", "select"}, SAME, ()),
    "--coef0": ({"cv", "select"}, SAME, ()),
    "--gamma": ({"cv", "select"}, "the kernel's gamma (select: fixed, poly only)",
                ("the kernel's gamma",)),
    "--folds": ({"cv", "select", "tune"}, "the number of folds t", ("fold",)),
    "--seed": ({"cv", "select", "tune", "bench"}, "the seed of the folds (and of what "
               "else is random there)", ("seed", "fold")),
    "--order": ({"cv", "select"}, "the BIF order, default inf in both", ("inf",)),
    "--method": ({"cv", "select"}, "the CV method", ("bif",)),
    "--scale": ({"cv", "select"}, "feature scaling", ("scale each feature",)),
    "--memory-budget": ({"cv", "select", "hypothetical", "tune"}, "a byte budget for the "
                        "dense matrices", ("8G",)),
    "--C": ({"hypothetical", "tune"}, "the cost C of the loss against the norm",
            ("cost C", "larger C, less regularisation")),
    "--confirm": ({"select", "bench"}, "best candidates confirmed by exact CV",
                  ("confirm", "exact")),
    "--n-jobs": ({"select", "bench"}, "parallel workers", ("parallel",)),
    "--kernels": ({"hypothetical", "tune"}, "a comma list of kernels (rbf = gaussian)",
                  ("comma list",)),
    "--test": ({"select", "tune"}, "a test data file", ("test data",)),
    "--out": ({"select", "hypothetical", "tune", "bench", "data"}, "the output folder",
              ()),
    "--plot": ({"select", "hypothetical"}, "PNG figures into --out", ("with --out",)),
    "--json": ({"cv", "select", "hypothetical", "tune", "bench", "data", "predict"},
               "print the report as JSON", ("JSON",)),
}
# Hidden options that only refuse a name with another meaning, and the option they name.
REFUSED = {("cv", "--epsilon"): "--svr-epsilon", ("hypothetical", "--lam-grid"): "--alpha-grid"}


def _options():
    """{option: {subcommand: help}} over every subcommand (hidden ones included)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    table = defaultdict(dict)
    for name, sub in commands.choices.items():
        for action in sub._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    table[option][name] = action.help
    return table


def test_every_shared_option_is_declared():
    table = _options()
    shared = {option: set(helps) for option, helps in table.items()
              if len({c for c in helps if (c, option) not in REFUSED}) > 1}
    assert shared == {option: commands for option, (commands, _, _) in SHARED.items()}


@pytest.mark.parametrize("option", sorted(SHARED))
def test_a_shared_option_has_one_meaning(option):
    commands, meaning, words = SHARED[option]
    helps = {c: h for c, h in _options()[option].items() if (c, option) not in REFUSED}
    assert all(h and h != argparse.SUPPRESS for h in helps.values())
    if meaning == SAME:
        assert len(set(helps.values())) == 1, helps
    for word in words:
        assert all(word in h for h in helps.values()), (word, helps)


@pytest.mark.parametrize("command, option", sorted(REFUSED))
def test_refused_spellings_name_the_right_option(tmp_path, capsys, command, option):
    (tmp_path / "d.csv").write_text("1,2,1\n2,1,-1\n1,1,1\n2,2,-1\n")
    argv = {"cv": ["cv", str(tmp_path / "d.csv"), "--machine", "lssvm", "--gamma", "1",
                   "--lam", "0.1", "--method", "exact", option, "0.5"],
            "hypothetical": ["hypothetical", str(tmp_path / "d.csv"), "--model", "ridge",
                             option, "0.5"]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert REFUSED[command, option] in err and option in err
