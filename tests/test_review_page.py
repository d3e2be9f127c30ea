"""The review page: written owner-only outside text/ with a PHI banner and a
policy that loads nothing; in a real headless Chromium (skipped without
one), a reviewer's keys accept, reject and edit items, the decisions file is
downloaded, and applying it gives the outputs a hand-written file with the
same decisions gives."""
from __future__ import annotations

import json
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from ensemble_deid.corpus.document import Document
from ensemble_deid.deid.redact import pieces
from ensemble_deid.deid.review import Queue, ReviewItem, queue_path, read_queue
from ensemble_deid.deid.review_page import build_review_page
from ensemble_deid.studies.html_report import write_page

from .test_review_apply import A, _decide, _decisions_for, _deidentify, _run, _tree, tiny_bundle  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from chromium import Chromium, find_chromium  # noqa: E402

needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (apt-get install chromium)")

HOSTILE = ("Dr </script><script>window.__pwned = 1</script> <img src=x onerror=\"window.__pwned = 2\">\n"
           "Patient José 😀 Núñez at Málaga on 3 May.")


def _hostile_page():
    doc = Document("n<1>", HOSTILE, ())
    name = HOSTILE.index("José")
    end = HOSTILE.index(" at")
    city = HOSTILE.index("Málaga")
    current = [A(name, end, "NAME:PATIENT")]
    items = (ReviewItem("0-1", doc.id, name, end, "NAME:PATIENT", 0.5, "near-threshold", "phi"),
             ReviewItem("0-2", doc.id, city, city + 6, "LOCATION:CITY", 0.7, "lexical", "text"))
    queue = Queue({"queue": 1, "bundle": None, "budget": {}, "items": 2}, items)
    page = build_review_page(queue, "c" * 64, {doc.id: doc}, {doc.id: current},
                             {doc.id: pieces(doc, current, "tag")}, context=400)
    return page, doc


def test_the_page_holds_its_data_escaped_with_a_phi_banner_and_a_policy_that_loads_nothing():
    page, doc = _hostile_page()
    assert "This page contains note text (PHI)" in page
    assert "default-src 'none'" in page
    assert "</script><script>window.__pwned" not in page and '<img src=x' not in page
    assert page.count("<script") == 2  # the data block and the page's own script


def test_review_page_command_writes_it_owner_only_outside_text(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    notes = _deidentify(tiny_bundle, out)
    _run("review", "page", out, "--notes", tiny_bundle / "test")
    path = out / "review" / "review.html"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not any((out / "text").glob("*.html"))
    data = json.loads(path.read_text().split('id="review-data">')[1].split("</script>")[0])
    first = notes[sorted(notes)[0]]
    item = data["items"][0]
    assert item["w"] == first.text[item["w0"]:item["w0"] + len(item["w"])] and item["w0"] == 0
    # the output beside it is the text the run released, piece by piece, over the whole window
    released = "".join(p[2] for p in item["out"])
    assert (out / "text" / f"{first.id}.txt").read_text().startswith(released)
    assert item["out"][0][0] == 0 and item["out"][-1][1] >= len(item["w"]) and "[NAME:PATIENT]" in released


def test_deidentify_writes_the_page_of_its_queue(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    _deidentify(tiny_bundle, out, "--mode", "surrogate", "--seed", "3")
    assert not (out / "review" / "review.html").exists()
    _run("deidentify", tiny_bundle / "model", tiny_bundle / "test", "--out", out, "--no-progress", "--mode",
         "surrogate", "--seed", "3", "--review", "none")
    page = (out / "review" / "review.html").read_text()
    assert "This page contains note text (PHI)" in page
    assert stat.S_IMODE((out / "review" / "review.html").stat().st_mode) == 0o600


def _key(b: Chromium, key: str, shift: bool = False, times: int = 1) -> None:
    codes = {"ArrowLeft": 37, "ArrowRight": 39, "Enter": 13, "Escape": 27}
    for _ in range(times):
        for kind in ("keyDown", "keyUp"):
            b.send("Input.dispatchKeyEvent", {
                "type": kind, "key": key, "code": key if key in codes else f"Key{key.upper()}",
                "windowsVirtualKeyCode": codes[key] if key in codes else ord(key.upper()), "modifiers": 8 if shift else 0},
                session=True)


def _decisions_shown(b: Chromium) -> list[str]:
    return b.evaluate("Array.from(document.querySelectorAll('#items tbody tr')).map(r => r.cells[6].textContent)")


@needs_chromium
def test_hostile_note_text_stays_text_in_chromium(tmp_path):
    page, doc = _hostile_page()
    path = write_page(tmp_path / "review" / "review.html", page)
    with Chromium() as b:
        b.open(path)
        assert b.problems() == [] and b.requests() == [path.resolve().as_uri()]
        assert b.evaluate("window.__pwned === undefined")
        assert b.evaluate("document.getElementById('note-window').textContent") == HOSTILE
        assert b.evaluate("document.querySelector('#note-window .cand').textContent") == "José 😀 Núñez"
        assert b.evaluate("document.getElementById('output-window').textContent") == \
            HOSTILE.replace("José 😀 Núñez", "[NAME:PATIENT]")
        _key(b, "j")
        assert b.evaluate("document.querySelector('#note-window .cand').textContent") == "Málaga"
        _key(b, "e")
        _key(b, "ArrowLeft", times=3)
        _key(b, "ArrowRight", shift=True)  # astral and accented characters count as one offset each, as in Python
        assert b.evaluate("document.querySelector('#note-window .cand').textContent") == "ál"
        _key(b, "Escape")
        assert b.evaluate("document.querySelector('#note-window .cand').textContent") == "Málaga"
        assert b.problems() == [] and b.evaluate("window.__pwned === undefined")


@needs_chromium
def test_a_long_queue_is_listed_a_page_at_a_time(tmp_path):
    text = "Seen by Dr. Ruiz. " * 45
    doc = Document("long", text, ())
    items = tuple(ReviewItem(f"0-{n}", "long", 18 * n + 12, 18 * n + 16, "NAME:DOCTOR", 0.5, "lexical", "text")
                  for n in range(45))
    queue = Queue({"queue": 1, "bundle": None, "budget": {}, "items": 45}, items)
    path = write_page(tmp_path / "review.html", build_review_page(queue, "d" * 64, {"long": doc}, {"long": []},
                                                                    {"long": pieces(doc, [], "mask")}))
    rows = "Array.from(document.querySelectorAll('#items tbody tr')).map(r => r.cells[0].textContent)"
    with Chromium() as b:
        b.open(path)
        assert b.evaluate(rows) == [str(n) for n in range(1, 41)]
        _key(b, "a", times=41)  # accept 41 items: the list turns to the page holding item 42
        assert b.evaluate(rows) == [str(n) for n in range(41, 46)]
        assert b.evaluate("document.querySelector('#items tr.sel').cells[0].textContent") == "42"
        assert b.evaluate("document.getElementById('page').textContent").startswith("items 41-45 of 45")
        assert "41 of 45 item(s) decided" in b.evaluate("document.getElementById('progress').textContent")
        _key(b, "k", times=2)
        assert b.evaluate(rows)[-1] == "40" and b.evaluate("document.querySelector('#items tr.sel').cells[0].textContent") == "40"
        assert b.evaluate("document.querySelector('#note-window .cand').textContent") == "Ruiz"
        assert b.problems() == []


@needs_chromium
def test_keyboard_review_downloaded_and_applied_equals_a_hand_written_decisions_file(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    notes = _deidentify(tiny_bundle, out)
    twin = tmp_path / "twin"
    shutil.copytree(out, twin)
    before = _tree(out)
    _run("review", "page", out, "--notes", tiny_bundle / "test")
    page = out / "review" / "review.html"
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    expected = _decisions_for(notes, out)
    hospital = expected["1-1"]
    with Chromium() as b:
        b.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads),
                                                "eventsEnabled": True})
        b.open(page)
        assert b.problems() == [] and b.requests() == [page.resolve().as_uri()]
        assert b.evaluate("document.getElementById('banner').textContent").startswith("This page contains note text")
        _key(b, "r")  # item 0-1, masked now: not PHI
        _key(b, "a")  # item 0-2, readable now: PHI
        assert _decisions_shown(b) == ["reject", "accept", "", ""]
        _key(b, "e")  # item 1-1: the hospital cut to its first five characters, as an organisation
        item = next(i for i in read_queue(queue_path(out)).items if i.item == "1-1")
        length = item.end - item.start
        _key(b, "ArrowLeft", times=length - 5)
        _key(b, "ArrowRight", shift=True)
        _key(b, "ArrowLeft", shift=True)
        second = notes[sorted(notes)[1]]
        assert b.evaluate("document.querySelector('#note-window .cand').textContent") == \
            second.text[hospital[1]:hospital[1] + 5]
        _key(b, "t")
        _key(b, "Enter")
        _key(b, "j")
        _key(b, "a")  # item 2-1 (the last: the cursor stays) accepted, then undone: left undecided
        assert _decisions_shown(b) == ["reject", "accept", "edit", "accept"]
        _key(b, "k")
        _key(b, "j")
        _key(b, "u")
        assert _decisions_shown(b) == ["reject", "accept", "edit", ""]
        assert "3 of 4 item(s) decided" in b.evaluate("document.getElementById('progress').textContent")
        _key(b, "s")
        b.wait_for("Browser.downloadProgress")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            files = [p for p in downloads.iterdir() if p.suffix == ".json"]
            if files and json.loads(files[0].read_text() or "null"):
                break
            time.sleep(0.2)
        assert b.problems() == []
    (downloaded,) = [p for p in downloads.iterdir() if p.suffix == ".json"]
    items = json.loads(downloaded.read_text())["items"]
    assert {k: tuple(v[f] for f in ("action", "start", "end", "label")) for k, v in items.items()} == {
        **expected, "1-1": ("edit", hospital[1], hospital[1] + 5, "LOCATION:ORGANIZATION")}
    _run("review", "apply", out, "--notes", tiny_bundle / "test", "--decisions", downloaded)
    assert _tree(out) != before
    by_hand = _decide(twin, tmp_path / "by-hand.json", expected)
    _run("review", "apply", twin, "--notes", tiny_bundle / "test", "--decisions", by_hand)
    assert _tree(out) == _tree(twin)
