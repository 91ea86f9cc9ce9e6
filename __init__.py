"""ctx2static: distil contextual language models into static word vectors."""

__version__ = "0.1.0"
