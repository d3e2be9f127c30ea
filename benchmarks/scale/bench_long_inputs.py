"""Benchmark of long inputs (issue 35 items 5 and 13).

Figures, printed and written to benchmarks/results/long-inputs.json:

- **one long token** (a base64 blob pasted into a note): seconds of the
  e-mail pattern as ``re`` runs it plainly (the code before the fix) and of
  the feature extractor's e-mail matcher, then of the whole feature
  extractor, on tokens of 20k, 40k, 80k... characters; each size's time over
  the previous one's (2 for linear time, 4 for quadratic);
- **memory per MB of note text**: peak resident memory of a fresh process
  that tokenizes one note and extracts its features (what the linear
  taggers do with each note in cv, fit and deidentify), for notes of 0.25,
  0.5 and 1 MB, minus the same process on a tiny note; and what reading a
  note over the readers' size limit costs now that it is refused up front.

Notes are synthetic (a Spanish clinical-style paragraph repeated, no real
data). Times are CPU seconds, the median of several runs (the machine is
shared: wall times of a starved process mean nothing).

    .venv/bin/python benchmarks/scale/bench_long_inputs.py [--repeat N] [--sizes 20000,40000,80000]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py and the groups
from common import RESULTS, machine_description, repeat, write_json

PARAGRAPH = ("Paciente de 45 años remitido por la Dra. Olga Berrocal al Hospital San Ysidro el 03/04/2019; "
             "refiere dolor torácico de dos días. Tel. 612 345 678, correo paciente@example.org.\n")

_MEMORY_CHILD = """
import resource, sys
from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.features import FeatureExtractor
paragraph, megabytes = sys.argv[1], float(sys.argv[2])
text = paragraph * max(1, int(megabytes * 1e6 / len(paragraph.encode())))
doc = Document("note", text)
FeatureExtractor().document_features(doc)
print(len(text.encode()), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

_REFUSED_CHILD = """
import resource, sys
from pathlib import Path
from ensemble_deid.corpus.formats import read_directory
docs, problems = read_directory(Path(sys.argv[1]), "brat")
print(len(docs), len(problems), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def long_token(sizes: list[int], times: int) -> list[dict]:
    from ensemble_deid.corpus.document import Document
    from ensemble_deid.taggers.features import REGEX_FEATURES, FeatureExtractor

    plain = re.compile(REGEX_FEATURES["email"].pattern)
    rows, previous = [], {}
    for n in sizes:
        token = ("QUJDab" * (n // 6 + 1))[:n]
        row = {"characters": n}
        # CPU seconds: on a shared machine a starved process's wall time says nothing
        if n <= 40_000:  # the plain pattern takes a minute at 80k and grows fourfold per doubling
            row["email_plain_re_s"] = repeat(lambda: list(plain.finditer(token)), 1)["cpu_median_s"]
        row["email_matcher_s"] = repeat(lambda: list(REGEX_FEATURES["email"].finditer(token)), times)["cpu_median_s"]
        doc = Document("d", f"Adjunto: {token} fin.")
        doc.tokens  # noqa: B018 - tokenized once, outside the timing
        row["features_s"] = repeat(lambda: FeatureExtractor().document_features(doc), times)["cpu_median_s"]
        for key in ("email_plain_re_s", "email_matcher_s", "features_s"):
            if key in row and key in previous:
                row[key.replace("_s", "_ratio_to_half")] = round(row[key] / max(previous[key], 1e-9), 2)
        previous = row
        rows.append(row)
        print(f"token of {n:>9,} chars: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items() if k != "characters"))
    return rows


def _child(code: str, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return done.stdout.split()


def memory_per_megabyte(sizes_mb: list[float]) -> dict:
    _, base_kb = _child(_MEMORY_CHILD, PARAGRAPH, "0")
    rows = []
    for mb in sizes_mb:
        text_bytes, peak_kb = map(int, _child(_MEMORY_CHILD, PARAGRAPH, str(mb)))
        extra_mb = (int(peak_kb) - int(base_kb)) / 1024
        rows.append({"note_mb": round(text_bytes / 1e6, 3), "peak_rss_mb": round(int(peak_kb) / 1024, 1),
                     "above_tiny_note_mb": round(extra_mb, 1), "mb_per_mb_of_text": round(extra_mb / (text_bytes / 1e6), 1)})
        print(f"note of {text_bytes / 1e6:.2f} MB: peak {int(peak_kb) / 1024:.0f} MB, "
              f"{rows[-1]['mb_per_mb_of_text']} MB of memory per MB of text")
    return {"tiny_note_peak_rss_mb": round(int(base_kb) / 1024, 1), "notes": rows}


def refused_note() -> dict:
    from ensemble_deid.corpus.formats.source import MAX_NOTE_BYTES

    with tempfile.TemporaryDirectory() as tmp:
        text = PARAGRAPH * (MAX_NOTE_BYTES // len(PARAGRAPH.encode()) + 10)
        Path(tmp, "big.txt").write_text(text, encoding="utf-8")
        Path(tmp, "big.ann").write_text("", encoding="utf-8")
        loaded, problems, peak_kb = map(int, _child(_REFUSED_CHILD, tmp))
    row = {"note_mb": round(len(text.encode()) / 1e6, 2), "limit_bytes": MAX_NOTE_BYTES, "documents_loaded": loaded,
           "problems": problems, "peak_rss_mb": round(peak_kb / 1024, 1)}
    print(f"note of {row['note_mb']} MB (over the limit of {MAX_NOTE_BYTES / 1e6:.0f} MB): {loaded} loaded, "
          f"peak {row['peak_rss_mb']} MB while refusing it")
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="20000,40000,80000,160000,320000,640000")
    parser.add_argument("--note-mb", default="0.25,0.5,1")
    parser.add_argument("--out", type=Path, default=RESULTS / "long-inputs.json")
    args = parser.parse_args(argv)
    result = {
        "machine": machine_description(),
        "long_token": long_token([int(s) for s in args.sizes.split(",")], args.repeat),
        "memory": memory_per_megabyte([float(s) for s in args.note_mb.split(",")]),
        "refused_note": refused_note(),
    }
    write_json(args.out, result)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
