"""Train a small classifier on handwritten digits (placeholder; run with `nox -s demo`)."""

print("demo placeholder")
