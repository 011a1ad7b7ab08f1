"""The tiny encoder fixtures live in tests/conftest.py (shared with the conformance suite)."""
