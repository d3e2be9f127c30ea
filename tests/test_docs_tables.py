"""The tables the docs copy from results files are the results files' own
(``benchmarks/sync_docs.py``): a benchmark rerun without a docs sync, or a
figure typed into a marked block, fails here."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def sync_docs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("sync_docs")


def test_marked_docs_tables_match_their_results_files(sync_docs, capsys):
    assert sync_docs.main(["--check"]) == 0, capsys.readouterr().out


def test_a_marked_block_gets_the_first_table_of_its_file(sync_docs):
    text = ("intro\n<!-- table from benchmarks/results/run_all-meddocan.md -->\n| typed | by hand |\n"
            "<!-- end of table -->\nafter\n")
    out = sync_docs.synced(text)
    table = sync_docs.first_table(BENCH / "results" / "run_all-meddocan.md")
    assert out == ("intro\n<!-- table from benchmarks/results/run_all-meddocan.md -->\n" + table
                   + "<!-- end of table -->\nafter\n")
    assert "typed" not in out and table.startswith("| system ")


def test_a_figure_block_gets_wall_cpu_and_load_from_its_results_file(sync_docs, tmp_path, monkeypatch):
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "commands.json").write_text(
        '{"commands": {"quick": {"wall_s": 151.0, "cpu_s": 96.4, "load_before": 3.9, "load_after": 2.1,'
        ' "cores": 2, "machine": {"when": "2026-11-26T04:40:00+0000"}}}}', encoding="utf-8")
    monkeypatch.setattr(sync_docs, "ROOT", tmp_path)
    out = sync_docs.synced("`make quick`: <!-- figure from benchmarks/results/commands.json quick -->51 s"
                           "<!-- end of figure -->.")
    assert out == ("`make quick`: <!-- figure from benchmarks/results/commands.json quick -->"
                   "2.5 min wall, 96 s CPU (2 cores, load 2.1-3.9, 2026-11-26)<!-- end of figure -->.")
    with pytest.raises(SystemExit, match="no timing 'demo'"):
        sync_docs.synced("<!-- figure from benchmarks/results/commands.json demo --><!-- end of figure -->")


def test_a_cell_block_quotes_one_cell_of_a_results_table(sync_docs, tmp_path, monkeypatch):
    # issue 34: the README quoted the refitted stacked learners while the prose of
    # benchmarks.md and ensembles.md still quoted the earlier compare run's figures
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "cmp.md").write_text(
        "intro\n\n| system | F1 | ΔF1 vs ref | p (Holm) |\n|---|--:|--:|--:|\n"
        "| crf | 0.9602 | -0.0092 | <0.001 |\n| lstm-crf-fea | 0.9644 | -0.0050 | 0.016 |\n"
        "| ensemble.stacked-svm (ref) | 0.9694 | | |\n\n| system | test | p |\n|---|---|--:|\n"
        "| crf | t-test | 0.003 |\n| crf | randomization | 0.002 |\n", encoding="utf-8")
    monkeypatch.setattr(sync_docs, "ROOT", tmp_path)

    def cell(row, column, points=""):
        return f'<!-- cell from benchmarks/results/cmp.md "{row}" "{column}"{points} -->0.9999<!-- end of cell -->'

    out = sync_docs.synced(f"SVM {cell('ensemble.stacked-svm', 'F1')}, +{cell('crf', 'ΔF1 vs ref', ' points')}"
                           f" points over the CRF, p = {cell('lstm-crf-fea', 'p (Holm)')}.")
    assert out == (f"SVM {cell('ensemble.stacked-svm', 'F1')}, +{cell('crf', 'ΔF1 vs ref', ' points')} points over"
                   f" the CRF, p = {cell('lstm-crf-fea', 'p (Holm)')}.").replace("0.9999", "{}").format(
                       "0.9694", "0.92", "0.016")
    # a table of tests (compare's second table): the row named by its first two cells
    assert sync_docs.synced(cell("crf randomization", "p")) == cell("crf randomization", "p").replace("0.9999", "0.002")
    # a figure named in both layouts of a file: the first one the file has
    both = '<!-- cell from benchmarks/results/cmp.md "crf" "p randomization (Holm)" or "crf randomization" "p" -->'
    assert sync_docs.synced(both + "x<!-- end of cell -->") == both + "0.002<!-- end of cell -->"
    with pytest.raises(SystemExit, match="no table with a row 'crf' and a column 'recall'"):
        sync_docs.synced(cell("crf", "recall"))
    with pytest.raises(SystemExit, match="no table with a row 'svm'"):
        sync_docs.synced(cell("svm", "F1"))
    with pytest.raises(SystemExit, match="2 rows 'crf'"):
        sync_docs.synced(cell("crf", "p"))


# A duration typed by hand goes stale (issue 34: "make quick 51 s" read 151 s on a
# loaded machine). A duration in prose near these words is a claim about how
# long something takes; it must come from a results file through a marked block.
# A number with a unit ("51 s", "15 CPU minutes") or a duration in words ("about a minute",
# "a few minutes", "many hours"): the guide's "make quick ... about a minute" was one.
DURATION = re.compile(r"(?<![\w.])(?:\d[\d,.]*\s?(?:CPU )?(?:s|secs?|seconds?|min|minutes?|h|hours?)"
                      r"|an? (?:minute|hour)|(?:a few|few|several|many|some) (?:seconds|minutes|hours))\b", re.I)
CLAIM = re.compile(r"\b(?:took|takes?|taking|about|measured|idle|wall|fits? in|on (?:two|2) (?:CPU )?cores"
                   r"|make (?:quick|demo)|six methods)\b|\btime:|~", re.I)
# sync_docs blocks, and the begin/end blocks a benchmark rewrites itself (common.replace_between_markers)
GENERATED = re.compile(r"<!-- ([\w ]+) from .*?<!-- end of \1 -->|<!-- ([\w-]+):begin .*?<!-- \2:end -->"
                       r"|<!-- [A-Za-z][\w-]* -->.*?<!--end-->", re.S)  # the last: sync_docs' short form
TIME_CELL = re.compile(r"\|\s*\d[\d,.]*\s?(?:s|min|h)\s*(?=\|)")
# A table column of durations ("| wall s |", "| seconds |", "| fit CPU s |"), not a rate ("tokens/s",
# "tokens per CPU s", "CPU s / M tokens"): such a table typed by hand goes stale like a sentence does
# (issue 34: benchmarks.md's cache and CV tables, ensembles.md's pruning stages).
TIME_COLUMN = re.compile(r"^(?!.*(?:/|\bper\b)).*(?:\b(?:s|secs?|seconds?|min|minutes?|h|hours?|ms)\b|\btime\b|\bwall\b)",
                         re.I)


def time_table_header(line: str, next_line: str) -> bool:
    """Whether ``line`` heads a Markdown table with a column of durations."""
    return (line.startswith("|") and re.match(r"\|\s*:?-", next_line) is not None
            and any(TIME_COLUMN.search(cell) for cell in line.strip().strip("|").split("|")))
# Durations that stay, each with its reason: (document, text on the line).
ALLOWED = {
    ("evaluation.md", "the 0.35 s target"): "a target, not a measurement",
    ("evaluation.md", "about 0.14 s is start-up"): "profile split of the CPU time in the scorer block above",
    ("guide.md", "end to end (fresh process): 25.9 s wall"):
        "sample output of bench_deidentify.py, shown verbatim; it prints CPU time and load itself",
    ("benchmarks.md", "a neural fit alone takes 125-150 CPU s"):
        "neural.json: fit.cpu_s of the four variants and the other seeds (127-150 s)",
    ("neural-taggers.md", "about 15 CPU minutes"): "version 1's recorded fit, neural.json baseline_recorded (913 CPU s)",
}


def hand_typed_durations(doc: Path) -> list[str]:
    text = GENERATED.sub(lambda m: "\n" * m.group(0).count("\n"), doc.read_text(encoding="utf-8"))
    found = []
    lines, code = text.splitlines(), False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            code = not code  # a command's sample output shows what it prints (the guide regenerates those)
        if any(doc.name == name and part in line for name, part in ALLOWED):  # reasons above
            continue
        if not code and time_table_header(line, lines[number] if number < len(lines) else ""):
            found.append(f"{doc.name}:{number}: a table of durations typed by hand: {line.strip()[:80]}")
            continue
        if code and "CPU" in line and "load" in line:
            continue  # a command's own timing line in its sample output: wall, CPU and load as it prints them
        for m in DURATION.finditer(line):
            window = line[max(0, m.start() - 60):m.end() + 40]
            if CLAIM.search(window) or TIME_CELL.search(line):
                found.append(f"{doc.name}:{number}: {line.strip()[:100]}")
                break
    return found


def test_no_duration_is_typed_by_hand_outside_a_generated_block(sync_docs):
    found = [hit for doc in sync_docs.documents() for hit in hand_typed_durations(doc)]
    assert not found, ("durations typed by hand (measure with benchmarks/scale/bench_commands.py or a benchmark, "
                       "then use a <!-- figure from ... --> block):\n" + "\n".join(found))


@pytest.mark.parametrize("line, flagged", [
    ("`make quick` 51 s on an idle machine", True),
    ("make demo    # the full study (~12 min idle)", True),
    ("| stacked-lstm | 0.9556 | 487 s |", True),
    ("trained for 30 epochs, about 2 passes", False),
    ("--timeout 30 (seconds) is the default", False),
    ("F1 84.72 in 0.0 s (threshold=1)", False),
    ("ensemble-deid demo --quick    # or: make quick; 3 taggers, 3 folds, about a minute", True),
    ("the cells below run (no files to download; a few minutes on two cores)", True),
    ("| jobs | wall s | fit s (sum over parts) |\n|---:|---:|---:|\n| 1 | 678.3 | 666.2 |", True),
    ("| stage | seconds |\n|---|---|\n| read 22 cache parts | 0.7–1.9 |", True),
    ("| tagger | strict F1 | fit CPU s |\n|---|---:|---:|\n| crf | 0.9602 | 210 |", True),
    ("| tagger | F1 | predict tokens/s | tokens per CPU s |\n|---|---|---|---|\n| crf | 0.96 | 9,826 | 34,172 |", False),
    ("| member | cost (CPU s / M tokens) |\n|---|--:|\n| crf | 48.4 |", False),
    ("```\n| tagger | fit s |\n|---|---|\n| crf | 116.9 |\n```", False),
    ("```\ntime: 342 s wall, 157 s CPU (load 5.4-11.5); base taggers 309 s, ensembles 23 s\n```", False),
    ("```\ntime: 93 s (base taggers 89 s, ensembles 3 s)\n```", True),
    ("<!-- table from benchmarks/results/cv.md -->\n| jobs | wall s |\n|---|---|\n| 1 | 678.3 |\n"
     "<!-- end of table -->", False),
    ("The price is training time: about 15 CPU minutes for one fit", True),
    ("Every tagger with 10-fold CV on two CPU cores takes many hours", True),
    ("a second fit on the same data, about the same", False),
    ("x <!-- figure from benchmarks/results/commands.json quick -->51 s wall, about<!-- end of figure -->", False),
])
def test_the_duration_check_tells_claims_from_other_numbers(tmp_path, line, flagged):
    doc = tmp_path / "doc.md"
    doc.write_text(line + "\n", encoding="utf-8")
    assert bool(hand_typed_durations(doc)) is flagged


def cli_help_texts():
    """(command path, text) of every command's and option's help of the CLI."""
    import click

    from ensemble_deid.cli import main as cli

    def walk(cmd, ctx, path):
        yield path, cmd.help or ""
        yield from ((f"{path} --{p.name}", getattr(p, "help", None) or "") for p in cmd.params)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                yield from walk(sub, click.Context(sub, parent=ctx, info_name=name), f"{path} {name}")

    return list(walk(cli, click.Context(cli, info_name="ensemble-deid"), "ensemble-deid"))


def test_no_cli_help_text_claims_a_duration():
    # the walk: `demo --quick` promised "a result in about a minute on two idle cores" (3.9 min measured, load 5-7)
    texts = cli_help_texts()
    assert any(path == "ensemble-deid demo --quick" for path, _ in texts)  # the walk reaches the subcommands
    found = [f"{path}: {text}" for path, text in texts for m in DURATION.finditer(text)
             if CLAIM.search(text[max(0, m.start() - 60):m.end() + 40])]
    assert not found, "durations typed into the CLI's help (the docs give measured ones):\n" + "\n".join(found)


# Generated tables whose wall-clock column has no CPU time or load beside it yet, each
# with what is missing; a new one fails the test below (issue 34 item 4: a wall time
# alone, on a shared machine, mostly measures the others' work).
WALL_WITHOUT_CPU_OR_LOAD: dict[str, str] = {}  # none left (deidentify-dask.md was the last, 2026-11-26)


def test_a_generated_table_of_wall_times_shows_cpu_time_and_load(sync_docs):
    def timed(header: str) -> bool:  # a column of durations, as for hand-typed tables above
        return any(TIME_COLUMN.search(cell) for cell in header.strip().strip("|").split("|"))

    missing = {}
    for doc in sync_docs.documents():
        for m in sync_docs.BLOCK.finditer(doc.read_text(encoding="utf-8")):
            header = m.group(3).splitlines()[0] if m.group(3).strip() else ""
            name = m.group(2).rsplit("/", 1)[-1]
            if timed(header) and not (re.search(r"\bCPU\b", m.group(3)) and re.search(r"\bload\b", m.group(3))):
                missing.setdefault(name, doc.name)
    assert set(missing) <= set(WALL_WITHOUT_CPU_OR_LOAD), (
        "generated tables of wall times without CPU time and load beside them: "
        + ", ".join(f"{name} (in {doc})" for name, doc in missing.items() if name not in WALL_WITHOUT_CPU_OR_LOAD))
    assert set(WALL_WITHOUT_CPU_OR_LOAD) <= set(missing), "fixed: take them off WALL_WITHOUT_CPU_OR_LOAD"


def test_the_stale_compare_note_goes_when_compare_and_run_all_agree(sync_docs):
    # benchmarks.md explains that its compare table is an earlier run than run_all's refitted
    # stacked learners; once a new compare lands and the figures agree, the note is wrong.
    results = BENCH / "results"
    same = all(sync_docs.table_cell(results / "meddocan-compare.md", f"ensemble.{m}", "F1")
               == sync_docs.table_cell(results / "run_all-meddocan.md", f"ensemble.{m}", "strict F1")
               for m in ("stacked-searn", "stacked-lstm"))
    note = "the `compare` table below is still the earlier\nrun's" in (BENCH.parent / "docs" / "benchmarks.md").read_text()
    assert note != same, ("remove the note in docs/benchmarks.md: compare and run_all agree now" if same
                          else "compare and run_all differ: benchmarks.md must say so")


def test_a_marked_block_can_take_a_later_table_of_its_file(sync_docs, tmp_path):
    two = tmp_path / "two.md"
    two.write_text("title\n| a |\n|---|\n| 1 |\n\nbetween\n| b |\n|---|\n| 2 |\n", encoding="utf-8")
    assert sync_docs.first_table(two) == "| a |\n|---|\n| 1 |\n"
    assert sync_docs.first_table(two, 2) == "| b |\n|---|\n| 2 |\n"
    with pytest.raises(SystemExit, match="holds 2 Markdown table"):
        sync_docs.first_table(two, 3)
    text = ("<!-- table from benchmarks/results/meddocan-compare.md, table 2 -->\n| old |\n<!-- end of table -->\n")
    out = sync_docs.synced(text)
    assert out.splitlines()[1].startswith("| system ") and "| test " in out.splitlines()[1]


# --- short markers (issue 53 item 9: sentence-long markers made README lines of 200-300 characters) ---

def test_a_short_marker_is_filled_from_its_definition_keeping_the_line_breaks(sync_docs, tmp_path, monkeypatch):
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "cmp.md").write_text("| system | F1 | ΔF1 vs ref |\n|---|---:|---:|\n| crf | 0.9602 | -0.0092 |\n",
                                    encoding="utf-8")
    monkeypatch.setattr(sync_docs, "ROOT", tmp_path)
    text = ("The CRF scores <!-- crf-f1 -->0.1<!--end--> and trails by <!-- gap -->\n9.99<!--end--> points.\n\n"
            "<!-- crf-f1: cell from benchmarks/results/cmp.md \"crf\" \"F1\" -->\n"
            "<!-- gap: cell from benchmarks/results/cmp.md\n     \"crf\" \"ΔF1 vs ref\" points -->\n")
    out = sync_docs.synced(text)
    assert out == text.replace(">0.1<", ">0.9602<").replace("\n9.99<", "\n0.92<")
    assert sync_docs.synced(out) == out
    with pytest.raises(SystemExit, match="<!-- nope --> has no definition"):
        sync_docs.synced("x <!-- nope -->1<!--end-->")
    with pytest.raises(SystemExit, match="defined twice"):
        sync_docs.synced("<!-- a: cell from benchmarks/results/cmp.md \"crf\" \"F1\" -->\n\n"
                         "<!-- a: cell from benchmarks/results/cmp.md \"crf\" \"ΔF1 vs ref\" -->\n")


def test_readme_markers_are_short_and_never_begin_a_line(sync_docs):
    """A generated figure in the README's prose stays within 80 columns of raw
    text, and no line begins with a marker (Markdown would end the paragraph
    there and show the rest of the sentence apart)."""
    readme = (sync_docs.ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    inline = [line for line in lines if "<!--" in line and not line.startswith("<!-- ")]
    assert inline and all(len(line) <= 80 for line in inline), [line for line in inline if len(line) > 80]
    assert not any(re.match(r"<!-- [\w-]+ -->", line) for line in lines)
    assert "<!-- cell from" not in readme and "<!-- figure from" not in readme  # the short form throughout
    definitions = [m.group(0) for m in sync_docs.DEFINE.finditer(readme)]
    assert definitions and all(len(line) <= 80 for d in definitions for line in d.splitlines())
