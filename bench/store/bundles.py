"""The machine bundles (bench.bundle/1, the Machines page) kept in the store's file, each whole, as its JSON text."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from bench.vocab import records
from bench.vocab.errors import RecordError
from bench.store.connection import StoreFile


class BundleStore:
    """The bundles of one store file (``Store(...).bundles``)."""

    def __init__(self, file: StoreFile):
        self._file = file

    def add(self, doc: Mapping[str, Any]) -> tuple[int, bool]:
        """Keep a machine bundle; (its id, whether it is new): the same bundle imported twice is kept once. The
        document's text is made and checked before anything is written: one that cannot be kept whole (text that is
        not valid Unicode: RecordError) stores nothing."""
        text = records.json_text(doc, indent=None)
        _unicode(doc)
        label = doc.get("label")
        with self._file._op() as con:
            row = con.execute("SELECT id FROM bundles WHERE doc = ?", (text,)).fetchone()
            if row is not None:
                return int(row[0]), False
            cur = con.execute("INSERT INTO bundles (added_at, label, doc) VALUES (?, ?, ?)",
                              (time.time(), label if isinstance(label, str) else None, text))
            assert cur.lastrowid is not None
            return int(cur.lastrowid), True

    def list(self) -> list[tuple[int, dict[str, Any]]]:
        """Every kept bundle, oldest first, as (id, document) (checked by records.load_bundle when read)."""
        with self._file._op() as con:
            return [(int(i), json.loads(doc)) for i, doc in con.execute("SELECT id, doc FROM bundles ORDER BY id")]

    def delete(self, bundle_id: int) -> bool:
        with self._file._op() as con:
            return con.execute("DELETE FROM bundles WHERE id = ?", (bundle_id,)).rowcount > 0


def _unicode(doc: Mapping[str, Any]) -> None:
    """RecordError where a bundle holds text that is not valid Unicode (a lone surrogate, escaped in its JSON): no
    page or terminal could show it whole."""
    text = json.dumps(doc, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordError(f"the bundle holds text that is not valid Unicode ({exc.object[exc.start:exc.end]!a} at "
                          f"character {exc.start} of its JSON); write the file again with valid text") from None
