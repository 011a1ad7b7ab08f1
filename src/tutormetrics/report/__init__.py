"""Reports for people: per-group summary tables (CSV, Markdown, LaTeX) and the effect-matrix figure.

Example:
    >>> from tutormetrics.report.tables import escape_markdown
    >>> escape_markdown("a|b")
    'a\\\\|b'
"""
