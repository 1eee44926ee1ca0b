"""`wiki report`: a lane's history read from the wiki and its journal, as data and as static HTML.

:mod:`.data` builds the report's record (pure reading: pages, the model page, the journal,
one git history walk); :mod:`.plots` draws its two figures as inline SVG (matplotlib, no
network); :mod:`.html` writes one page per lane and per kernel family, and an index;
:mod:`.kernels` reads a kernel family's receipts. The report sits at the demos' layer, above
the modes: it reuses the watcher's thrash and stall checks (``step.audit``) and the receipt
key (``step.kernel.sealing``), and nothing but ``_cli`` imports it.
"""
