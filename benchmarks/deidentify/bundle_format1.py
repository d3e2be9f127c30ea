"""A copy of a bundle that older code reads, for ``bench_deidentify.py
--baseline-model``: the same fitted members, their BiLSTM checkpoints
rewritten in checkpoint format 1 (vocabularies as lists of entries and
counts) and without the neural parameters added since (``linear_buckets``,
``linear_decay``, ``bio_decode``), which must be at their defaults (0/False)
or the copy would be another model; then every checksum recomputed. The
weights are not touched: the baseline row of ``bench_deidentify.py`` checks
that both write the same files.

    python benchmarks/deidentify/bundle_format1.py WS/model-F WS/model-F-format1
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def main(argv=None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path)
    ap.add_argument("out", type=Path, help="a new folder")
    args = ap.parse_args(argv)
    import torch

    from ensemble_deid.deid import BundleError, Deidentifier
    from ensemble_deid.deid.bundle import MANIFEST, _manifest_checksum
    from ensemble_deid.files import folder_checksums, owner_only_tree, write_private
    from ensemble_deid.taggers.neural.base import _ADDED_LATER as ADDED_LATER, READABLE_FORMATS, unpack_vocab

    Deidentifier.load(args.bundle)  # checked as deidentify checks it, before anything is copied
    if args.out.exists():
        raise SystemExit(f"{args.out}: exists; give a new folder")
    manifest = json.loads((args.bundle / MANIFEST).read_text(encoding="utf-8"))
    for member in manifest["members"]:  # before anything is written
        if any(k in ADDED_LATER and v for k, v in member["params"]["__dict__"]):
            raise SystemExit(f"member {member['label']}: a parameter added later is set; older code has no such model")
    shutil.copytree(args.bundle, args.out)
    for member in manifest["members"]:
        member["params"]["__dict__"] = [[k, v] for k, v in member["params"]["__dict__"] if k not in ADDED_LATER]
        path = args.out / member["folder"]
        if path.is_file():  # a neural member's checkpoint
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
            for key in ADDED_LATER:
                ckpt["params"].pop(key, None)
            for field in ("words", "chars"):  # format 1's lists of entries and counts
                ckpt[field] = unpack_vocab(ckpt[field], f"{path}: {field}").to_state()
            ckpt["format"] = READABLE_FORMATS[0]  # format 1
            torch.save(ckpt, path)
    owner_only_tree(args.out)  # torch.save follows the umask
    manifest["files"] = folder_checksums(args.out, BundleError, skip=(MANIFEST,))
    manifest["manifest_sha256"] = _manifest_checksum(manifest)
    write_private(args.out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, default=str).encode("utf-8"))
    print(f"wrote {args.out} (checksum {manifest['manifest_sha256']})")
    return args.out


if __name__ == "__main__":
    main()
