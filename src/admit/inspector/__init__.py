"""The request inspector: trace records shown as a person reads them.

:mod:`admit.inspector.page` renders one self-contained HTML page from trace records (``admit inspect
TRACE.jsonl [--id ID] -o page.html`` from a trace file: ``--trace-file`` of ``admit search`` and ``admit pack``,
or a server's ``trace_file``); :mod:`admit.inspector.log` is the service's trace sink that keeps each tenant's
latest requests, so ``admit serve`` serves the same page at ``/inspect``, each tenant seeing only its own.

Example:
    >>> page = render_page([{"request_id": "r1", "query_class": "default", "decisions": []}])
    >>> page.startswith("<!doctype html>")
    True
"""

from admit.inspector.log import InspectLog
from admit.inspector.page import read_trace_file, render_page

__all__ = ["InspectLog", "read_trace_file", "render_page"]
