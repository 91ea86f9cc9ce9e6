"""Corpus reading, tokenisation, vocabulary and (later) the teacher stage."""
