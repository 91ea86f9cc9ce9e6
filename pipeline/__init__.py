"""The teacher stage: resolve and load a teacher, run it over the corpus, hand each shard to the cache writer.

The only package that imports torch and transformers; nothing below it (cache, text) and no student
imports it. ``models`` resolves names, ``teacher`` runs forwards, ``scorer`` finds top-k
substitutes, ``batching`` sorts inputs by length, ``align`` maps subwords to words, ``extract``
drives a whole pass, ``config`` holds its options.
"""
