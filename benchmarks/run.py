"""Side-by-side benchmarks of Ember and PyTorch (placeholder; run with `nox -s bench`)."""

print("no benchmarks yet")
