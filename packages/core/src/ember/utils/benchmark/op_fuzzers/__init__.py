"""``ember.utils.benchmark.op_fuzzers``: ready-made fuzzers for elementwise (``unary``,
``binary``), sparse (``sparse_unary``, ``sparse_binary``) and FFT (``spectral``) benchmarks,
as ``torch.utils.benchmark.op_fuzzers``: the same parameter specifications, so a seed gives
PyTorch's shapes, steps and layouts."""
