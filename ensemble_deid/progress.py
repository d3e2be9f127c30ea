"""Progress of long steps: a bar on a terminal, plain lines in a log.

A tqdm bar redraws itself every second; written to a file or a CI log that
is not a terminal, each redraw becomes a line, and an hour-long run leaves
thousands of them. :func:`progress_bar` therefore returns a tqdm bar only
when its stream is a terminal, and otherwise a :class:`PlainProgress` that
writes whole lines: one when a phase begins (:func:`phase`), one per step at
most every ``interval`` seconds, and one at the end.

``eta=False`` leaves the time-remaining out of a terminal bar, for steps of
very different lengths (a study's ensembles: a voting fit takes a second, a
stacked BiLSTM-CRF many minutes), where tqdm's average-based estimate is
wrong by an order of magnitude; elapsed time and the count are still shown.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Iterable, TextIO

PLAIN_INTERVAL = 30.0  # seconds between two step lines in a log
_NO_ETA = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
_NO_ETA_NO_TOTAL = "{l_bar}{bar}| {n_fmt} [{elapsed}{postfix}]"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


def _clock(seconds: float) -> str:
    minutes, s = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{s:02d}" if hours else f"{minutes:02d}:{s:02d}"


class PlainProgress:
    """The subset of tqdm's interface the package uses, writing plain lines
    (see the module docstring)."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None, desc: str = "", unit: str = "it",
                 file: TextIO | None = None, interval: float = PLAIN_INTERVAL, disable: bool = False, **_ignored):
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.desc, self.unit = total, desc, unit
        self.file = file or sys.stderr
        self.interval = interval
        self.disable = disable
        self.n = 0
        self.postfix = ""
        self._start = time.monotonic()
        self._last_line = None  # when the last step line was written
        self._shown_n = -1
        self._closed = False

    # --- writing -----------------------------------------------------------------
    def _line(self) -> None:
        if self.disable:
            return
        count = f"{self.n}/{self.total}" if self.total is not None else f"{self.n}"
        text = f"{self.desc}: " if self.desc else ""
        text += f"{count} {self.unit} [{_clock(time.monotonic() - self._start)}]"
        if self.postfix:
            text += f" {self.postfix}"
        print(text, file=self.file, flush=True)
        self._last_line = time.monotonic()
        self._shown_n = self.n

    def _maybe_line(self) -> None:
        if self._last_line is None or time.monotonic() - self._last_line >= self.interval:
            self._line()

    # --- tqdm's interface --------------------------------------------------------
    def __iter__(self):
        for item in self.iterable or ():
            yield item
            self.update()
        self.close()

    def __enter__(self) -> "PlainProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._maybe_line()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def set_postfix(self, ordered_dict: Any = None, refresh: bool = True, **kwargs) -> None:
        items = dict(ordered_dict or {}, **kwargs)
        self.postfix = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in items.items())

    def set_description(self, desc: str = "", refresh: bool = True) -> None:
        self.desc = desc

    def write(self, s: str, file: TextIO | None = None, **_ignored) -> None:
        if not self.disable:
            print(s, file=file or self.file, flush=True)

    def refresh(self) -> None:
        """Nothing to redraw: a log gets lines, not redraws."""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.n != self._shown_n:
                self._line()


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
                 disable: bool = False, eta: bool = True, leave: bool = True, file: TextIO | None = None,
                 interval: float = PLAIN_INTERVAL):
    """A tqdm bar when ``file`` (default stderr) is a terminal, else plain
    lines (:class:`PlainProgress`). ``eta=False``: no time-remaining."""
    stream = file or sys.stderr
    if disable or not _is_terminal(stream):
        return PlainProgress(iterable, total=total, desc=desc, unit=unit, file=stream, interval=interval,
                             disable=disable)
    from tqdm.auto import tqdm

    fmt = None if eta else (_NO_ETA if total is not None or hasattr(iterable, "__len__") else _NO_ETA_NO_TOTAL)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream, leave=leave, bar_format=fmt)


def phase(bar, text: str) -> None:
    """Say that a new phase begins: the bar's postfix on a terminal, a line
    of its own in a log (never rate-limited: phases are few)."""
    if isinstance(bar, PlainProgress):
        bar.postfix = text
        bar._line()
    else:
        bar.set_postfix_str(text, refresh=True)
