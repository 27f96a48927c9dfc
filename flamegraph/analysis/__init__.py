"""After the fold: the attribution report, the views of a profile, what an off-CPU profile's threads
did.
"""
