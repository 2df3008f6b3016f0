"""Text files the project reads (job specs, resources, the store's records), decoded as UTF-8
with one clear error: a file that is not UTF-8 is an :class:`UnreadableFile` naming the file
and the byte offset, never a ``UnicodeDecodeError`` traceback."""

from __future__ import annotations

from pathlib import Path

from streamops_contract.exceptions import ConfigError, UnreadableFile


def decode(data: bytes, path: Path | str, what: str = "") -> str:
    """``data`` (the bytes of ``path``) as UTF-8 text; ``what``: e.g. ``"job spec "``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            f"{what}{path}: not valid UTF-8 at byte {exc.start} "
            f"(0x{data[exc.start]:02x}); save it as UTF-8"
        ) from exc


def read_text(path: Path, what: str = "") -> str:
    """The text of ``path``; one that cannot be read or is not UTF-8 is a ConfigError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what}{path}: {exc.strerror}") from exc
    return decode(data, path, what)
