"""The store: one SQLite file holding the runs (``Store``, bench.store.runs) with their epochs and samples, the
imported runs with where they came from (``Store.imports``, bench.store.imports), and the machine bundles
(``Store.bundles``, bench.store.bundles), the owners of its active runs (``Store.owners``, bench.store.owners); its schema versioned and migrated one version at a time
(bench.store.schema); a stored row read into a record, or named as unreadable (bench.store.rows)."""

from __future__ import annotations

from bench.vocab.errors import RunLost, RunReplaced, RunUnreadable, StoreError
from bench.store.bundles import BundleStore
from bench.store.identity import Owner, RunKey
from bench.store.imports import ImportedRun, ImportLog, Source
from bench.store.owners import Owners
from bench.store.rows import RawRun, RunListing, UnreadableRun
from bench.store.runs import ACTIVE_STATUSES, Store
from bench.store.schema import VERSION as SCHEMA_VERSION
from bench.store.schema import StoreIdsUsedUp, StoreTooNew

__all__ = ["ACTIVE_STATUSES", "SCHEMA_VERSION", "BundleStore", "ImportLog", "ImportedRun", "Owner", "Owners", "RawRun",
           "RunKey", "RunListing", "RunLost", "RunReplaced", "RunUnreadable", "Source", "Store", "StoreError",
           "StoreIdsUsedUp", "StoreTooNew", "UnreadableRun"]
