"""`trajbench replay calibrate`: the harness's own limits, measured against a calibration server
in another process that streams flat out or paced like an engine and stamps each chunk's send
time (the client's CPU per turn, its timing error, and how it compares with agentic-bench)."""

from __future__ import annotations

from .run import CalRow, Paced, calibrate, format_rows, layout_line, rows_to_json

__all__ = ["CalRow", "Paced", "calibrate", "format_rows", "layout_line", "rows_to_json"]
