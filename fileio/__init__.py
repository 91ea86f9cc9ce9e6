"""Files in and out, one way each, a module a job.

Atomic writes (:mod:`.atomic`), the checks an output passes before any work (:mod:`.outputs`),
temporaries and TMPDIR (:mod:`.temps`), folder locks (:mod:`.locks`), checksums and sealed folders
(:mod:`.digests`), checked reading of text, compressed or not, and JSON (:mod:`.reading`), and the
environment's refusals as one line (:mod:`.oserrors`).
"""
