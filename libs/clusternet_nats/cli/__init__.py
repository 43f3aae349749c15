"""`cnet`: Clusternet's objects from the command line, the way kubectl shows Kubernetes'.

It speaks only the hub's HTTP API (never NATS), so it needs nothing but a URL, and whatever
it shows is what any other HTTP client of the hub would see.
"""
