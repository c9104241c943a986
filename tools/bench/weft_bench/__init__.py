"""weft-bench: runs weft's benchmark suites, prints tables, stores and compares results."""
