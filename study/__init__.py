"""Studies: one TOML file runs extract -> students -> retrofit -> eval -> report into one folder.

``schema`` holds what a study is, ``loader`` reads and checks the TOML, ``layout`` names the
output files, ``runner`` runs (and skips) the steps, ``report`` and ``figures`` write the report.
"""
