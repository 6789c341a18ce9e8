"""The machinery of ``ember.library`` (custom ops): schemas, the ops' kernel tables and
dispatch, their autograd, ``custom_op``, the fake-kernel context and ``opcheck``."""
