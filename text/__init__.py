"""Text handling, below every stage: corpus reading, tokenisation, vocabulary, encoded corpus."""
