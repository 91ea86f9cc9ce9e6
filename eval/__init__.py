"""Evaluation: word similarity, analogy, relation similarity, concept categorization."""
