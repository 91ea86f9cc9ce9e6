"""Static-vector students: plain baselines from text and distilled students from a cache."""
