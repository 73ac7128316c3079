"""The engine's errors a user meets, a leaf every module may import: ConfigError (one message per problem),
RecordError (a record or file that cannot be read) and RunActiveError (an action refused while a run is active)."""

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
