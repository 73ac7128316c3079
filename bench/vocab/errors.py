"""The engine's errors a user meets, a leaf every module may import: ConfigError (one message per problem),
RecordError (a record or file that cannot be read), RunActiveError (an action refused while a run is active) and the
store's StoreError with its kinds: a run's row gone (RunLost), taken by another run (RunReplaced) or not readable here
(RunUnreadable)."""

from __future__ import annotations


class ConfigError(ValueError):
    """One or more fields are invalid; ``errors`` lists one message per problem."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


class RecordError(ValueError):
    """A record (or file) cannot be read or imported; the message says what is wrong and what to do."""


class RunActiveError(ValueError):
    """A run cannot be deleted (or changed) while it is active; the message says what to do."""


class StoreError(RuntimeError):
    """The store could not be read or written; the message says why and what to do."""


class RunLost(StoreError):
    """The store has no row for the run being written (its file was deleted, or replaced by one without it): the
    writer writes the run again whole."""


class RunReplaced(StoreError):
    """The row under the run's id holds another run (created at another time): the store file was replaced, by an
    older copy say, whose run under that id is not this one. Nothing was written into it."""


class RunUnreadable(StoreError):
    """A stored run's rows hold what this version cannot read (a column that is not JSON, a field of the wrong kind,
    a table from another version): the message names the run, the field and what it held, and how to export the raw
    rows or delete the run (bench.store.rows.UnreadableRun.error)."""
