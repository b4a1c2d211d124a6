"""Where in the user's code something happened: the frames of the stack outside
dualad, reverse and mixed.

A frame is told by its module's name (``frame.f_globals["__name__"]``), never by
its file's path: a clone of this repository may sit in a folder named ``dualad``,
and then every path of the user's code would look like the library's too.
Read on error and warning paths only.
"""

from __future__ import annotations

from types import FrameType
from typing import Iterator

__all__ = ["line_of", "ours_then_user", "user_frames"]

LIBRARY = frozenset({"dualad", "reverse", "mixed"})
# Between a user's call and ours sits the dispatch of these (NumPy's __array_function__).
ARRAY_LIBRARIES = frozenset({"numpy", "scipy", "cupy", "array_api_strict", "array_api_compat"})


def _package(frame: FrameType) -> str:
    return frame.f_globals.get("__name__", "").partition(".")[0]


def _is_users(frame: FrameType, first: bool) -> bool:
    package = _package(frame)
    return package not in LIBRARY and not (first and package in ARRAY_LIBRARIES)


def user_frames(frame: FrameType | None) -> Iterator[FrameType]:
    """The frames from ``frame`` outward that are the user's: outside this library,
    and, before the first of them, outside the array libraries too (whose dispatch a
    user's call goes through to reach ours)."""
    first = True
    while frame is not None:
        if _is_users(frame, first):
            first = False
            yield frame
        frame = frame.f_back


def ours_then_user(frame: FrameType | None) -> tuple[list[FrameType], FrameType | None]:
    """The frames from ``frame`` outward up to the user's code (innermost first), and the
    first of the user's frames (None where the whole stack is ours)."""
    ours = []
    while frame is not None and not _is_users(frame, True):
        ours.append(frame)
        frame = frame.f_back
    return ours, frame


def line_of(frame: FrameType) -> str:
    """``filename:lineno`` of ``frame``."""
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
