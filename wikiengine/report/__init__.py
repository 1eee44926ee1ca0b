"""`wiki report`: a lane's history read from the wiki and its journal, as data and as static HTML.

:mod:`.data` builds the report's record (pure reading: pages, the model page, the journal,
one git history walk); :mod:`.plots` draws its two figures as inline SVG (matplotlib, no
network); :mod:`.html` writes one page per lane and an index. The report sits above
``step`` (it reuses the watcher's thrash and stall checks) and beside the modes.
"""
