"""Clusternet's own rules, apart from how they are stored or carried.

The layer between `api` (the wire models) and `store` (JetStream): what a cluster's namespace is
called, when a cluster is Ready, which Manifest a feed names, how a Description's phase reads to a
human. Each rule lives here once, and every service (and the CLI) asks it, so two services can
never disagree about one. Nothing here does I/O: it imports `api` and the standard library only.
"""
