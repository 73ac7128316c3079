"""The engine's input error, a leaf every module may import: ConfigError (one message per problem)."""

from __future__ import annotations


class ConfigError(ValueError):
    """One or more fields are invalid; ``errors`` lists one message per problem."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))
