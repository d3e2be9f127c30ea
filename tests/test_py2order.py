"""Replaying Python 2.7's string hash and set order (evaluation/py2order.py),
the order in which the 2014 i2b2 program walks the documents. Expected values
were printed by Python 2.7.18 (64-bit) itself; the end-to-end check is the
doc_order case of test_evaluation_files.py (the real program's output)."""
from __future__ import annotations

from ensemble_deid.evaluation.py2order import official_id, py2_intersection_order, py2_str_hash


def test_string_hash_is_python_2_7s():
    # python2.7 -c "print [hash(s) for s in ['', 'a', '100-01', 'record-']]"
    assert [py2_str_hash(s) for s in ["", "a", "100-01", "record-"]] == [
        0, 12416037344, -4991428356436765007, 7228431211722476047]


def test_intersection_order_is_python_2_7s():
    # ds, dg dicts filled in these orders; python2.7: list(set(ds.keys()) & set(dg.keys()))
    keys = ["%03d-%02d" % (i * 7 % 40 + 100, i % 3) for i in range(40)]
    expected = ['116-02', '130-01', '125-00', '107-01', '124-02', '122-02', '120-02', '132-01', '106-00', '114-02',
                '112-00', '126-02', '101-02', '104-00', '100-00', '108-00', '129-00', '134-01', '103-02', '136-01',
                '110-00', '109-01', '123-00', '131-00', '117-01', '118-02', '133-00', '115-01', '121-00', '119-01',
                '105-02', '113-01', '135-02', '138-01', '137-02', '111-01', '139-02', '102-00', '128-01', '127-00']
    assert py2_intersection_order(keys, keys[::-1] + ["999-99"]) == expected


def test_official_ids_of_file_names():
    assert official_id("100-01.xml") == "100-01"
    assert official_id("100-01-system.xml") == "100-01"
    assert official_id("macro-01.xml") == "macro-01-"
