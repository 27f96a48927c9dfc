"""Naming frames: [unknown] -> function where build-ids match (symbols, buildid, grouping), the fold-
time frame hook, DWARF codecs.
"""
