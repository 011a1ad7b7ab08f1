"""tutormetrics: reference-free metrics for LLM tutor replies, validated against rubric ratings.

Importing the package is cheap: torch and sentence-transformers load only when an encoder metric runs.
"""

__version__ = "0.1.0"
