"""Shared I/O: the one input opener, perf script, the one safe writer, folded text, sidecars, private
paths, errors.
"""
