"""``ember.data`` (also ``ember.utils.data``): datasets, samplers and the DataLoader.

Reserved by the foundation issue; the data-loading classes arrive with the nn/data issue.
"""
