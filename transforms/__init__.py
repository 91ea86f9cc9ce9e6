"""Transforms of whole vector tables, whatever made them.

One table from several (:mod:`.combine`); all-but-the-top and z-scored rogue dimensions
(:mod:`.postprocess`); each word's identity appended to its row (:mod:`.lexical`). Retrofitting is
not here: it learns from lexicons (``retrofit/``, a stage of its own with its command and
resources); these need nothing but the tables.
"""
