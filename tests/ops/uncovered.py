"""Registered ops that have no sample inputs in ``ember.ops.opdb`` yet (issue 11).

``tests/ops/test_ops.py`` fails on an op missing from both the op database and this list,
and on a name here that has samples now (delete it then). The list only shrinks.
"""

UNCOVERED = frozenset({

})
