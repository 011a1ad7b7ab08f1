"""Expected errors. The CLI turns every subclass of :class:`TutorMetricsError` into one message and exit code 2."""


class TutorMetricsError(Exception):
    """Base class: an error whose message is meant for the user, with a hint on how to fix it."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}\n  hint: {self.hint}" if self.hint else base


class InputSchemaError(TutorMetricsError):
    """An input file is missing, unreadable, or lacks a required column."""


class ConfigError(TutorMetricsError):
    """An option or parameter has an invalid value."""


class ModelLoadError(TutorMetricsError):
    """The encoder could not be loaded (missing path, remote code refused, no network)."""
