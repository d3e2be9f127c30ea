"""MEDDOCAN (../shared/corpora/meddocan): registration counts, BRAT = XML,
alignment loss. Skipped when the corpus is neither beside the repository nor
where MEDDOCAN_DIR says."""
from __future__ import annotations

import os
from collections import Counter

import pytest
from click.testing import CliRunner

from ensemble_deid.corpus.bio import alignment_loss
from ensemble_deid.cli import main
from ensemble_deid.corpus.formats import load_directory

from .conftest import REPO_ROOT

# The figures: train 500 documents / 11,333 PHI, dev (registered as
# test) 250 / 5,801.
TRAIN_DOCS, TRAIN_PHI = 500, 11_333
TEST_DOCS, TEST_PHI = 250, 5_801


@pytest.fixture(scope="module")
def train_docs(meddocan_dir):
    return load_directory(meddocan_dir / "train" / "xml")


def _row(output: str, first: str) -> list[str]:
    line = next(x for x in output.splitlines() if x.startswith(f"| {first} "))
    return [c.strip() for c in line.strip("|").split("|")]


def test_corpus_add_and_show(meddocan_dir, workspace, train_docs, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)  # the command, run from the repository root
    # relative paths as the README writes them (../shared/corpora/meddocan/... beside
    # shared/), and the folder MEDDOCAN_DIR names in a clone elsewhere
    train, test = (os.path.relpath(meddocan_dir / split / "xml", REPO_ROOT) for split in ("train", "dev"))
    runner = CliRunner()
    result = runner.invoke(main, ["corpus", "add", "meddocan", "--train", train, "--test", test])
    assert result.exit_code == 0, result.output
    assert f"train: {TRAIN_DOCS} documents, {TRAIN_PHI:,} PHI" in result.output
    assert f"test: {TEST_DOCS} documents, {TEST_PHI:,} PHI" in result.output

    result = runner.invoke(main, ["corpus", "show", "meddocan"])
    assert result.exit_code == 0, result.output
    out = result.output
    train, test = _row(out, "train"), _row(out, "test")
    assert train[1] == str(TRAIN_DOCS) and train[4] == f"{TRAIN_PHI:,}"
    assert test[1] == str(TEST_DOCS) and test[4] == f"{TEST_PHI:,}"

    # the alignment loss column shows the measured figure
    report = alignment_loss(train_docs)
    assert train[5] == f"{100 * report.loss:.2f}%"

    # PHI by type: every subtype with its count, and the counts add up
    by_type = Counter(a.label for d in train_docs for a in d.annotations)
    for label, n in by_type.items():
        assert _row(out, label)[1] == f"{n:,}"
    assert sum(by_type.values()) == TRAIN_PHI
    assert _row(out, "NAME")[1] == f"{sum(n for k, n in by_type.items() if k.startswith('NAME:')):,}"


def test_alignment_loss_on_train_is_at_most_half_a_percent(train_docs):
    report = alignment_loss(train_docs)
    print(f"MEDDOCAN train alignment loss: {report.misaligned} misaligned + {report.lost_to_overlap} "
          f"lost to overlap of {report.spans} spans = {100 * report.loss:.3f}%")
    assert report.spans == TRAIN_PHI
    assert report.loss <= 0.005


def test_brat_and_xml_copies_of_dev_are_identical(meddocan_dir):
    xml = {d.id: d for d in load_directory(meddocan_dir / "dev" / "xml")}
    brat = {d.id: d for d in load_directory(meddocan_dir / "dev" / "brat")}
    assert len(xml) == TEST_DOCS and set(xml) == set(brat)
    for doc_id, x in xml.items():
        b = brat[doc_id]
        assert x.text == b.text, doc_id
        assert x == b, doc_id  # same offsets, categories and types
        assert [a.text for a in x.annotations] == [a.text for a in b.annotations], doc_id
    assert sum(len(d.annotations) for d in xml.values()) == TEST_PHI
