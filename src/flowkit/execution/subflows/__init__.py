"""``Subflow`` nodes at run time: a child flow run inside the parent's thread through a
``ChildRunner``, its attempts, and its records in the parent's journal.
"""
