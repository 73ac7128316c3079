"""The engine's input errors, a leaf every module may import: ConfigError (one message per problem) and RecordError
(a record or file that cannot be read)."""

from __future__ import annotations


class ConfigError(ValueError):
    """One or more fields are invalid; ``errors`` lists one message per problem."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


class RecordError(ValueError):
    """A record (or file) cannot be read or imported; the message says what is wrong and what to do."""
