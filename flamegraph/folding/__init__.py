"""Folding: perf script text -> folded stacks (the grammar, the fast path, --jobs, off-CPU pairing).
"""
